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

package syncer

import (
	"errors"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/kubeocean/kubeocean/internal/app"
	physicalevents "github.com/kubeocean/kubeocean/internal/syncer/bottomup/events"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/node"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/service"
)

// Sections of the syncer's --help.
const (
	SectionSyncer   = "Syncer"
	SectionPhysical = "Physical cluster"
	SectionKubelet  = "Kubelet API of virtual nodes"
)

// AddFlags registers the syncer binary's own flags, defaulting to the
// current values of o.
func (o *Options) AddFlags(fss *cliflag.NamedFlagSets) {
	fs := fss.FlagSet(SectionSyncer)
	fs.StringVar(&o.BindingName, "cluster-binding", o.BindingName, "Name of the ClusterBinding this syncer serves (required).")
	app.IntVar(fs, &o.Workers, "workers", 1, "Concurrent reconciles per controller.")
	app.IntVar(fs, &o.PodWorkers, "pod-workers", 1, "Concurrent reconciles of each pod controller: the virtual pod controller and the pod status controller.")
	app.IntVar(fs, &o.NodeWorkers, "node-workers", 1, "Concurrent reconciles of the virtual node and node Lease controllers.")
	fs.StringVar(&o.VirtualAPIServer, "virtual-apiserver-address", o.VirtualAPIServer,
		"host:port at which pods in the physical cluster reach the virtual API server; sets their KUBERNETES_SERVICE_HOST/PORT.")
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	fs.DurationVar(&o.DrainTimeout, "drain-timeout", o.DrainTimeout,
		"How long a drained virtual node's pods are asked to leave through the eviction API (PodDisruptionBudgets may refuse) before they are deleted, when the physical node or the binding is gone. A drain that a configuration change caused (a selector or a policy) only evicts, however long it takes.")
	if o.MaxNodeRemovalFraction == 0 {
		o.MaxNodeRemovalFraction = node.DefaultMaxNodeRemovalFraction
	}
	fs.Float64Var(&o.MaxNodeRemovalFraction, "max-node-removal-fraction", o.MaxNodeRemovalFraction,
		"Largest share (0-1) of the binding's virtual nodes one configuration change (binding or policy selector, policy deleted) may remove without the operator's confirmation (annotation kubeocean.io/confirm-node-removal); nodes that run pods always wait for it. 1 turns the share rule off.")
	if o.NodeStatusUpdateInterval == 0 {
		o.NodeStatusUpdateInterval = node.DefaultStatusUpdateInterval
	}
	fs.DurationVar(&o.NodeStatusUpdateInterval, "node-status-update-interval", o.NodeStatusUpdateInterval,
		"Shortest time between two status writes of one virtual node: capacity changes in between (pods of the physical node's own workloads coming and going) are written together, with the latest figures, at its end.")
	fs.BoolVar(&o.SyncDaemonSetPods, "sync-daemonset-pods", o.SyncDaemonSetPods,
		"Run the pods of DaemonSets placed on virtual nodes in the physical cluster (off: they stay Pending with a condition saying why).")
	fs.DurationVar(&o.OutageRenewalLimit, "outage-lease-renewal-limit", o.OutageRenewalLimit,
		"While the physical apiserver does not answer, the virtual nodes' Leases are renewed from the physical nodes' last known state, so the virtual cluster evicts nothing; after this long without an answer they are no longer renewed and the virtual cluster's node lifecycle evicts the pods by their tolerations (0: renew throughout an outage).")
	if o.PlaceholderNamespace == "" {
		o.PlaceholderNamespace = DefaultPlaceholderNamespace
	}
	fs.StringVar(&o.PlaceholderNamespace, "placeholder-namespace", o.PlaceholderNamespace,
		"Virtual namespace of the pods that hold, on each virtual node, the host ports used on its physical node by pods Kubeocean does not run.")
	if o.ClusterDomain == "" {
		o.ClusterDomain = service.DefaultClusterDomain
	}
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain,
		"DNS domain of the virtual cluster, which the binding's DNS server (kubeocean-dns) answers and the pods' search path names.")
	if o.DNSImage == "" {
		o.DNSImage = DefaultDNSImage
	}
	fs.StringVar(&o.DNSImage, "dns-image", o.DNSImage,
		"Image of the binding's DNS server, kubeocean-dns, which the syncer runs as a Deployment in the mount namespace (the syncer's image ships it).")
	o.addEventFlags(fs)
	physical := fss.FlagSet(SectionPhysical)
	app.PositiveFloat32Var(physical, &o.PhysicalQPS, "physical-kube-api-qps", "Queries per second to the physical cluster's API server.")
	app.IntVar(physical, &o.PhysicalBurst, "physical-kube-api-burst", 1, "Burst of queries to the physical cluster's API server.")
	o.Kubelet.AddFlags(fss.FlagSet(SectionKubelet))
}

// addEventFlags registers the token buckets of the events recorded from
// the physical cluster (docs/events.md).
func (o *Options) addEventFlags(fs *pflag.FlagSet) {
	if o.Events == (physicalevents.Limits{}) {
		o.Events = physicalevents.Limits{
			ObjectQPS: physicalevents.DefaultObjectQPS, ObjectBurst: physicalevents.DefaultObjectBurst,
			BindingQPS: physicalevents.DefaultBindingQPS, BindingBurst: physicalevents.DefaultBindingBurst,
		}
	}
	fs.Float64Var(&o.Events.ObjectQPS, "event-qps-per-object", o.Events.ObjectQPS,
		"Virtual event writes per second about one virtual pod or node, for the events recorded from the physical cluster; a new event beyond it is dropped (kubeocean_syncer_events_dropped_total), more of an event already recorded is added to its count at the next token.")
	fs.IntVar(&o.Events.ObjectBurst, "event-burst-per-object", o.Events.ObjectBurst, "Burst of --event-qps-per-object.")
	fs.Float64Var(&o.Events.BindingQPS, "event-qps", o.Events.BindingQPS,
		"Virtual event writes per second of the binding, for the events recorded from the physical cluster, whatever the number of its pods and nodes.")
	fs.IntVar(&o.Events.BindingBurst, "event-burst", o.Events.BindingBurst, "Burst of --event-qps.")
}

// Validate checks what single flags cannot: that the binding is named and
// the kubelet API's settings hold together.
func (o *Options) Validate() error {
	var errs []error
	if o.BindingName == "" {
		errs = append(errs, errors.New("--cluster-binding is required"))
	}
	if o.OutageRenewalLimit < 0 {
		errs = append(errs, errors.New("--outage-lease-renewal-limit must not be negative"))
	}
	if o.Events.ObjectQPS < 0 || o.Events.ObjectBurst < 0 || o.Events.BindingQPS < 0 || o.Events.BindingBurst < 0 {
		errs = append(errs, errors.New("--event-qps-per-object, --event-burst-per-object, --event-qps and --event-burst must not be negative"))
	}
	if o.NodeStatusUpdateInterval < 0 {
		errs = append(errs, errors.New("--node-status-update-interval must not be negative"))
	}
	if err := o.Kubelet.Complete(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
