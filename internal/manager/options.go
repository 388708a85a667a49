/*
Copyright The Kubeocean Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package manager

import (
	"errors"
	"fmt"
	"time"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager/clusterbinding"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
	"github.com/kubeocean/kubeocean/internal/syncer"
)

// Syncer modes (--syncer-mode).
const (
	// ModeDeployment runs each syncer as a Deployment rendered from the
	// syncer templates; for production.
	ModeDeployment = "deployment"
	// ModeInProcess runs each syncer inside the manager; for local and
	// small setups and demos.
	ModeInProcess = "in-process"
)

// Options configure the manager beyond the shared process flags.
type Options struct {
	// SyncerMode is ModeDeployment or ModeInProcess.
	SyncerMode string
	// SyncerTemplateDir holds the syncer templates (deployment mode).
	SyncerTemplateDir string
	// SyncerImage is the image of syncer Deployments.
	SyncerImage string
	// SyncerNamespace holds the syncer Deployments and their Leases.
	SyncerNamespace string
	// SyncerServiceAccount is the account syncer pods run as.
	SyncerServiceAccount string
	// Workers reconcile bindings concurrently; a check of an unreachable
	// cluster holds a worker for up to 30 s.
	Workers int
	// VirtualAPIServerAddress is the host:port at which pods in the
	// physical clusters reach the virtual API server; passed to every
	// syncer (--virtual-apiserver-address), in both modes.
	VirtualAPIServerAddress string
	// SyncerWorkers, SyncerPodWorkers, SyncerNodeWorkers, PhysicalQPS and
	// PhysicalBurst configure in-process syncers like the syncer binary's
	// flags.
	SyncerWorkers     int
	SyncerPodWorkers  int
	SyncerNodeWorkers int
	PhysicalQPS       float32
	PhysicalBurst     int
	// SyncerDrainTimeout and SyncDaemonSetPods are the syncers'
	// --drain-timeout and --sync-daemonset-pods: given to in-process
	// syncers, and passed on to syncer Deployments when set.
	SyncerDrainTimeout time.Duration
	SyncDaemonSetPods  bool
	// SyncerMaxNodeRemovalFraction and SyncerOutageLeaseRenewalLimit are
	// the syncers' --max-node-removal-fraction and
	// --outage-lease-renewal-limit, likewise (zero: the syncer's default).
	SyncerMaxNodeRemovalFraction  float64
	SyncerOutageLeaseRenewalLimit time.Duration
	// SyncerEventQPS and SyncerEventQPSPerObject are the syncers'
	// --event-qps and --event-qps-per-object, likewise.
	SyncerEventQPS          float64
	SyncerEventQPSPerObject float64
	// Kubelet configures the kubelet API of in-process syncers' virtual
	// nodes; its port range is shared by all of them.
	Kubelet syncer.KubeletOptions
	// ApproveKubeletServingCSRs runs the approver of the syncers' serving
	// certificate requests (--kubelet-serving-cert-source=csr); always on
	// for in-process syncers in CSR mode.
	ApproveKubeletServingCSRs bool

	// Not flags: tests shorten them.
	TemplatePollInterval time.Duration
	RecheckInterval      time.Duration
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{
		SyncerMode:           ModeDeployment,
		SyncerTemplateDir:    "/etc/kubeocean/syncer-template",
		SyncerImage:          "ghcr.io/kubeocean/kubeocean-syncer:latest",
		SyncerNamespace:      "kubeocean-system",
		SyncerServiceAccount: "kubeocean-syncer",
		Workers:              4,
		SyncerWorkers:        4,
		SyncerPodWorkers:     16,
		SyncerNodeWorkers:    16,
		PhysicalQPS:          300,
		PhysicalBurst:        600,
		Kubelet:              syncer.NewKubeletOptions(),
		TemplatePollInterval: syncertemplate.DefaultPollInterval,
		RecheckInterval:      clusterbinding.DefaultRecheckInterval,
	}
}

// Sections of the manager's --help.
const (
	SectionManager = "Manager"
	SectionSyncers = "Syncers"
)

// AddFlags registers the manager's flags, defaulting to the current values.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet(SectionManager)
	app.IntVar(fs, &o.Workers, "workers", 1, "ClusterBindings reconciled concurrently.")
	fs.StringVar(&o.VirtualAPIServerAddress, "virtual-apiserver-address", o.VirtualAPIServerAddress,
		"host:port at which pods in the physical clusters reach the virtual API server; passed on to every syncer.")
	fs = fss.FlagSet(SectionSyncers)
	fs.StringVar(&o.SyncerMode, "syncer-mode", o.SyncerMode,
		`How syncers run: "deployment" (a Deployment per binding, rendered from --syncer-template-dir) or "in-process" (inside the manager).`)
	fs.StringVar(&o.SyncerTemplateDir, "syncer-template-dir", o.SyncerTemplateDir,
		"Folder of the Go templates (*.yaml) of a binding's syncer objects, in deployment mode. Changes are picked up while running.")
	fs.StringVar(&o.SyncerImage, "syncer-image", o.SyncerImage, "Image of the syncer Deployments.")
	fs.StringVar(&o.SyncerNamespace, "syncer-namespace", o.SyncerNamespace, "Namespace of the syncer Deployments.")
	fs.StringVar(&o.SyncerServiceAccount, "syncer-service-account", o.SyncerServiceAccount, "ServiceAccount the syncer pods run as.")
	app.IntVar(fs, &o.SyncerWorkers, "syncer-workers", 1, "Concurrent reconciles per controller of in-process syncers.")
	app.IntVar(fs, &o.SyncerPodWorkers, "syncer-pod-workers", 1, "Concurrent reconciles of each pod controller (virtual pods, pod status) of in-process syncers.")
	app.IntVar(fs, &o.SyncerNodeWorkers, "syncer-node-workers", 1, "Concurrent reconciles of the virtual node and node Lease controllers of in-process syncers.")
	app.PositiveFloat32Var(fs, &o.PhysicalQPS, "physical-kube-api-qps", "Queries per second of each in-process syncer to its physical cluster.")
	app.IntVar(fs, &o.PhysicalBurst, "physical-kube-api-burst", 1, "Burst of each in-process syncer's queries to its physical cluster.")
	fs.DurationVar(&o.SyncerDrainTimeout, "syncer-drain-timeout", o.SyncerDrainTimeout,
		"The syncers' --drain-timeout: how long a drained virtual node's pods are asked to leave through the eviction API before they are deleted (0: the syncer's default, 10m).")
	fs.BoolVar(&o.SyncDaemonSetPods, "sync-daemonset-pods", o.SyncDaemonSetPods,
		"The syncers' --sync-daemonset-pods: run the pods of DaemonSets placed on virtual nodes in the physical cluster.")
	fs.Float64Var(&o.SyncerMaxNodeRemovalFraction, "syncer-max-node-removal-fraction", o.SyncerMaxNodeRemovalFraction,
		"The syncers' --max-node-removal-fraction: the largest share (0-1) of a binding's virtual nodes one configuration change may remove without the operator's confirmation (0: the syncer's default, 0.5).")
	fs.DurationVar(&o.SyncerOutageLeaseRenewalLimit, "syncer-outage-lease-renewal-limit", o.SyncerOutageLeaseRenewalLimit,
		"The syncers' --outage-lease-renewal-limit: after this long without an answer from a physical apiserver, its virtual nodes' Leases are no longer renewed (0: renew throughout an outage).")
	fs.Float64Var(&o.SyncerEventQPS, "syncer-event-qps", o.SyncerEventQPS,
		"The syncers' --event-qps: virtual event writes per second of a binding for the events recorded from its physical cluster (0: the syncer's default).")
	fs.Float64Var(&o.SyncerEventQPSPerObject, "syncer-event-qps-per-object", o.SyncerEventQPSPerObject,
		"The syncers' --event-qps-per-object: virtual event writes per second about one virtual pod or node (0: the syncer's default).")
	fs.BoolVar(&o.ApproveKubeletServingCSRs, "approve-kubelet-serving-csrs", o.ApproveKubeletServingCSRs,
		"Approve the CertificateSigningRequests of the syncers' kubelet API serving certificates (syncers with --kubelet-serving-cert-source=csr): only for bindings this manager runs and their syncer pods' IPs. On by itself for in-process syncers with --kubelet-serving-cert-source=csr.")
	// In deployment mode the syncer Deployments take these flags instead.
	o.Kubelet.AddFlags(fss.FlagSet(syncer.SectionKubelet))
}

// Validate reports flags that cannot work together.
func (o *Options) Validate() error {
	var errs []error
	switch o.SyncerMode {
	case ModeDeployment:
		if o.SyncerTemplateDir == "" || o.SyncerImage == "" || o.SyncerNamespace == "" {
			errs = append(errs, errors.New("--syncer-template-dir, --syncer-image and --syncer-namespace are required in deployment mode"))
		}
	case ModeInProcess:
	default:
		errs = append(errs, fmt.Errorf("--syncer-mode must be %q or %q, not %q", ModeDeployment, ModeInProcess, o.SyncerMode))
	}
	if err := o.Kubelet.Complete(); err != nil {
		errs = append(errs, err)
	}
	if o.SyncerMode == ModeInProcess && o.Kubelet.Address != "" && o.Kubelet.CertSource == syncer.CertSourceCSR {
		o.ApproveKubeletServingCSRs = true
	}
	if o.SyncerMaxNodeRemovalFraction < 0 || o.SyncerMaxNodeRemovalFraction > 1 || o.SyncerOutageLeaseRenewalLimit < 0 {
		errs = append(errs, errors.New("--syncer-max-node-removal-fraction must be within 0-1 and --syncer-outage-lease-renewal-limit not negative"))
	}
	if o.SyncerEventQPS < 0 || o.SyncerEventQPSPerObject < 0 {
		errs = append(errs, errors.New("--syncer-event-qps and --syncer-event-qps-per-object must not be negative"))
	}
	if o.Workers < 1 || o.SyncerWorkers < 1 || o.SyncerPodWorkers < 1 || o.SyncerNodeWorkers < 1 {
		errs = append(errs, errors.New("--workers, --syncer-workers, --syncer-pod-workers and --syncer-node-workers must be at least 1"))
	}
	return errors.Join(errs...)
}
