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
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager/clusterbinding"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/internal/manager/csrapproval"
	"github.com/kubeocean/kubeocean/internal/manager/secretwatch"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
	"github.com/kubeocean/kubeocean/internal/serving"
	"github.com/kubeocean/kubeocean/internal/syncer"
	physicalevents "github.com/kubeocean/kubeocean/internal/syncer/bottomup/events"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// Component is the manager's name in user agents, events and its Lease.
const Component = "kubeocean-manager"

// Limits of the connectivity checks' requests to one physical cluster: a
// check makes a few dozen access reviews at once.
const (
	checkQPS   = 20
	checkBurst = 50
)

// syncCheckTimeout bounds the readiness check on informer sync.
const syncCheckTimeout = time.Second

// Setup returns the app.Setup of the manager.
func Setup(opts Options) app.Setup {
	return func(ctx context.Context, p *app.Process) ([]app.Runnable, error) {
		if err := opts.Validate(); err != nil {
			return nil, err
		}
		return setup(ctx, p, opts)
	}
}

func setup(ctx context.Context, p *app.Process, opts Options) ([]app.Runnable, error) {
	ocean, err := kubeoceanclient.NewForConfig(p.Config)
	if err != nil {
		return nil, err
	}
	virtual := informers.NewCluster("virtual", p.Kube, ocean, 0)
	bindings := virtual.Kubeocean(informers.Scope{}).Kubeocean().V1alpha1().ClusterBindings()
	// Only the kubeconfig Secrets the bindings reference, each watched on
	// its own; the binding controller says which.
	secrets := secretwatch.New(p.Kube)

	// The runners report to the controller, which is built after them.
	var bindingController *clusterbinding.Controller
	enqueue := func(name string) { bindingController.Enqueue(name) }
	runner, runnables, err := newRunner(ctx, p, opts, virtual, enqueue, func() { bindingController.EnqueueAll() })
	if err != nil {
		return nil, err
	}
	getSecret := func(_ context.Context, namespace, name string) (*corev1.Secret, error) {
		return secrets.Get(namespace, name)
	}
	checker := connectivity.New(getSecret, connectivity.Options{
		QPS: checkQPS, Burst: checkBurst, UserAgent: Component,
		Build: func(config *rest.Config) (kubernetes.Interface, error) {
			p.Requests.Wrap(config, "physical")
			return kubernetes.NewForConfig(config)
		},
	})
	virtualClusterUID, err := virtualClusterIdentity(ctx, p.Kube)
	if err != nil {
		return nil, err
	}
	bindingController, err = clusterbinding.New(clusterbinding.Options{
		Client: ocean.KubeoceanV1alpha1(), Bindings: bindings, Secrets: secrets,
		Checker: checker, Syncers: runner, Recorder: p.Recorder,
		Metrics: p.Metrics, Registry: p.Registry, RecheckInterval: opts.RecheckInterval,
		VirtualClusterUID: virtualClusterUID,
	})
	if err != nil {
		return nil, err
	}

	if opts.ApproveKubeletServingCSRs {
		approver, err := newCSRApprover(ctx, p, opts, virtual, bindings.Lister())
		if err != nil {
			return nil, err
		}
		runnables = append(runnables, app.ControllerRunnable(approver.Controller, 1))
	}

	p.Health.AddReadyz(serving.Check{Name: "informers-synced", Fn: func(r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), syncCheckTimeout)
		defer cancel()
		return virtual.WaitForCacheSync(ctx)
	}})
	return append(runnables,
		app.ControllerRunnable(bindingController.Controller, opts.Workers),
		app.Runnable{Name: "kubeconfig-secrets", Run: secrets.Run},
		app.Runnable{Name: "informers", Run: func(ctx context.Context) error {
			// Started with the context that ends when any runnable fails, so
			// that Shutdown below has informers that stop to wait for.
			virtual.Start(ctx)
			<-ctx.Done()
			virtual.Shutdown()
			return nil
		}},
	), nil
}

// newCSRApprover builds the approver of the syncers' serving certificate
// requests, on informers of the requests of signer kubelet-serving and, in
// deployment mode, of the syncer pods.
func newCSRApprover(ctx context.Context, p *app.Process, opts Options, virtual *informers.Cluster,
	bindings kubeoceanlisters.ClusterBindingLister) (*csrapproval.Controller, error) {
	requests := virtual.Kube(informers.Scope{FieldSelector: csrapproval.FieldSelector}).Certificates().V1().CertificateSigningRequests()
	var syncers csrapproval.Syncers
	var synced []cache.InformerSynced
	if opts.SyncerMode == ModeInProcess {
		// In-process syncers ask as the manager, at its own address.
		review, err := p.Kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("the manager's own identity, which its in-process syncers' certificate requests carry: %w", err)
		}
		syncers = csrapproval.InProcess{
			Username: review.Status.UserInfo.Username, Address: net.ParseIP(opts.Kubelet.Address), Bindings: bindings,
		}
	} else {
		pods := virtual.Kube(informers.Scope{
			Namespace: opts.SyncerNamespace, LabelSelector: csrapproval.InstanceLabel,
			Slim: csrapproval.SlimPod, SlimName: "syncer-pods",
		}).Core().V1().Pods()
		syncers = csrapproval.Deployed{
			Namespace: opts.SyncerNamespace, ServiceAccount: opts.SyncerServiceAccount,
			Bindings: bindings, Pods: pods.Lister(),
		}
		synced = append(synced, pods.Informer().HasSynced)
	}
	return csrapproval.New(csrapproval.Options{
		Client: p.Kube.CertificatesV1(), Requests: requests, Syncers: syncers, HasSynced: synced,
		Recorder: p.Recorder, Metrics: p.Metrics, Registry: p.Registry,
	})
}

// newRunner builds the syncer runner of opts.SyncerMode and what it needs
// to run. enqueue reports a change to one binding's syncer, enqueueAll a
// change to all of them (the templates).
func newRunner(ctx context.Context, p *app.Process, opts Options, virtual *informers.Cluster,
	enqueue func(string), enqueueAll func()) (syncers.Runner, []app.Runnable, error) {
	if opts.SyncerMode == ModeInProcess {
		runner, err := syncers.NewInProcess(ctx, syncers.InProcessOptions{
			Process: p,
			Syncer: syncer.Options{
				Workers: opts.SyncerWorkers, PodWorkers: opts.SyncerPodWorkers, NodeWorkers: opts.SyncerNodeWorkers,
				VirtualAPIServer: opts.VirtualAPIServerAddress,
				PhysicalQPS:      opts.PhysicalQPS, PhysicalBurst: opts.PhysicalBurst,
				Kubelet:      opts.Kubelet,
				DrainTimeout: opts.SyncerDrainTimeout, SyncDaemonSetPods: opts.SyncDaemonSetPods,
				MaxNodeRemovalFraction: opts.SyncerMaxNodeRemovalFraction, OutageRenewalLimit: opts.SyncerOutageLeaseRenewalLimit,
				Events: physicalevents.Limits{BindingQPS: opts.SyncerEventQPS, ObjectQPS: opts.SyncerEventQPSPerObject},
			},
			Recorder: p.Recorder, OnChange: enqueue,
		})
		if err != nil {
			return nil, nil, err
		}
		return runner, []app.Runnable{{Name: "in-process-syncers", Run: runner.Run}}, nil
	}

	templates, err := syncertemplate.NewSource(opts.SyncerTemplateDir)
	if err != nil {
		return nil, nil, err
	}
	scoped := virtual.Kube(informers.Scope{Namespace: opts.SyncerNamespace, LabelSelector: syncers.ManagedSelector})
	runner, err := syncers.NewDeployments(syncers.DeploymentsOptions{
		Namespace: opts.SyncerNamespace, Image: opts.SyncerImage, ServiceAccountName: opts.SyncerServiceAccount,
		Args:              syncerArgs(opts),
		Templates:         templates,
		DeploymentsClient: p.Kube.AppsV1(), ServiceAccountsClient: p.Kube.CoreV1(), ConfigMapsClient: p.Kube.CoreV1(),
		Deployments: scoped.Apps().V1().Deployments(), ServiceAccounts: scoped.Core().V1().ServiceAccounts(),
		ConfigMaps: scoped.Core().V1().ConfigMaps(),
		Recorder:   p.Recorder, OnChange: enqueue,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("deployment syncers: %w", err)
	}
	watch := app.Runnable{Name: "syncer-templates", Run: func(ctx context.Context) error {
		return templates.Watch(ctx, opts.TemplatePollInterval, enqueueAll)
	}}
	return runner, []app.Runnable{watch}, nil
}

// syncerArgs are the flags the manager passes on to syncer Deployments.
func syncerArgs(opts Options) []string {
	var args []string
	if opts.VirtualAPIServerAddress != "" {
		args = append(args, "--virtual-apiserver-address="+opts.VirtualAPIServerAddress)
	}
	if opts.SyncerDrainTimeout > 0 {
		args = append(args, "--drain-timeout="+opts.SyncerDrainTimeout.String())
	}
	if opts.SyncDaemonSetPods {
		args = append(args, "--sync-daemonset-pods")
	}
	if opts.SyncerMaxNodeRemovalFraction > 0 {
		args = append(args, "--max-node-removal-fraction="+strconv.FormatFloat(opts.SyncerMaxNodeRemovalFraction, 'g', -1, 64))
	}
	if opts.SyncerOutageLeaseRenewalLimit > 0 {
		args = append(args, "--outage-lease-renewal-limit="+opts.SyncerOutageLeaseRenewalLimit.String())
	}
	if opts.SyncerEventQPS > 0 {
		args = append(args, "--event-qps="+strconv.FormatFloat(opts.SyncerEventQPS, 'g', -1, 64))
	}
	if opts.SyncerEventQPSPerObject > 0 {
		args = append(args, "--event-qps-per-object="+strconv.FormatFloat(opts.SyncerEventQPSPerObject, 'g', -1, 64))
	}
	return args
}

// virtualClusterIdentity reads the UID of the virtual cluster's
// kube-system namespace, which names this virtual cluster in the claims of
// mount namespaces: two virtual clusters may each have a binding of the
// same name. Without the grant (an older RBAC) the claims name the binding
// alone, with a log line.
func virtualClusterIdentity(ctx context.Context, kube kubernetes.Interface) (string, error) {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, connectivity.IdentityNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		klog.FromContext(ctx).Info("Cannot read the virtual cluster's identity; mount namespace claims name the binding alone",
			"namespace", connectivity.IdentityNamespace, "err", err)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading the virtual cluster's identity (namespace %s): %w", connectivity.IdentityNamespace, err)
	}
	return string(ns.UID), nil
}
