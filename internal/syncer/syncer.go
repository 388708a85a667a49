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
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/clusterhealth"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/serving"
	physicalevents "github.com/kubeocean/kubeocean/internal/syncer/bottomup/events"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/node"
	"github.com/kubeocean/kubeocean/internal/validation"
	"github.com/kubeocean/kubeocean/pkg/informers"
	"github.com/kubeocean/kubeocean/pkg/remotecluster"
)

// Component is the syncer's name in user agents, events and leases.
const Component = "kubeocean-syncer"

// syncCheckTimeout bounds the readiness check on informer sync.
const syncCheckTimeout = time.Second

// DefaultDrainTimeout is the drain timeout of Options.DrainTimeout 0.
const DefaultDrainTimeout = 10 * time.Minute

// Options configure a syncer beyond the shared process flags.
type Options struct {
	// BindingName is the ClusterBinding this syncer serves.
	BindingName string
	// Workers per controller; PodWorkers for the two pod controllers (the
	// virtual pod controller and the pod status controller), where most of
	// the work is; NodeWorkers for the node and lease
	// controllers, which write one object per node when nodes are lent or
	// a policy changes.
	Workers, PodWorkers, NodeWorkers int
	// VirtualAPIServer is the host:port at which pods in the physical
	// cluster reach the virtual API server ("" leaves their
	// KUBERNETES_SERVICE_* as the physical cluster sets them).
	VirtualAPIServer string
	// PhysicalQPS and PhysicalBurst limit requests to the physical cluster.
	PhysicalQPS   float32
	PhysicalBurst int
	// Kubelet configures the virtual nodes' kubelet API.
	Kubelet KubeletOptions
	// DrainTimeout is how long a drained virtual node's pods are asked to
	// leave through the eviction API (PodDisruptionBudgets may refuse)
	// before they are deleted; 0 is DefaultDrainTimeout.
	DrainTimeout time.Duration
	// MaxNodeRemovalFraction is node.Options.MaxNodeRemovalFraction.
	MaxNodeRemovalFraction float64
	// SyncDaemonSetPods runs the pods of DaemonSets placed on virtual
	// nodes in the physical cluster; off, they stay Pending with a
	// condition saying why.
	SyncDaemonSetPods bool
	// NodeStatusUpdateInterval is the shortest time between two status
	// writes of one virtual node; 0 is node.DefaultStatusUpdateInterval.
	NodeStatusUpdateInterval time.Duration
	// OutageRenewalLimit stops renewing the virtual nodes' Leases once the
	// physical apiserver has not answered for that long, so that the
	// virtual cluster evicts their pods by its tolerations; 0 renews them
	// throughout an outage (see lease.Options).
	OutageRenewalLimit time.Duration
	// PlaceholderNamespace is the virtual namespace of the host port
	// placeholders; "" is DefaultPlaceholderNamespace.
	PlaceholderNamespace string
	// ClusterDomain is the virtual cluster's DNS domain, which the
	// binding's DNS server answers; "" is service.DefaultClusterDomain.
	ClusterDomain string
	// DNSImage is the image of the binding's DNS server (kubeocean-dns,
	// shipped in the syncer's image); "" is DefaultDNSImage.
	DNSImage string
	// Events bound the virtual writes of the events recorded from the
	// physical cluster; zero fields are the package's defaults.
	Events physicalevents.Limits
}

// DefaultDNSImage is the syncer image of manifests/deploy, which ships
// kubeocean-dns.
const DefaultDNSImage = "ghcr.io/kubeocean/kubeocean-syncer:latest"

// clusterClients are the typed clients of one cluster: those of the
// controllers, which fail fast, and those the informers list and watch
// with, which wait for an apiserver that does not answer (see
// clusterhealth.WaitForAnswer).
type clusterClients struct {
	Kube      kubernetes.Interface
	Kubeocean kubeoceanclient.Interface

	ListWatchKube      kubernetes.Interface
	ListWatchKubeocean kubeoceanclient.Interface
}

func newClusterClients(config *rest.Config) (clusterClients, error) {
	var c clusterClients
	var errs [4]error
	c.Kube, errs[0] = kubernetes.NewForConfig(config)
	c.Kubeocean, errs[1] = kubeoceanclient.NewForConfig(config)
	waiting := clusterhealth.WaitForAnswer(config)
	c.ListWatchKube, errs[2] = kubernetes.NewForConfig(waiting)
	c.ListWatchKubeocean, errs[3] = kubeoceanclient.NewForConfig(waiting)
	return c, errors.Join(errs[:]...)
}

// Setup returns the app.Setup of a syncer for opts.BindingName.
func Setup(opts Options) app.Setup {
	return func(ctx context.Context, p *app.Process) ([]app.Runnable, error) {
		return setup(ctx, p, opts)
	}
}

// syncerEnv is what the controllers of one syncer are built from.
type syncerEnv struct {
	opts     Options
	process  *app.Process
	binding  *kubeoceanv1alpha1.ClusterBinding
	virtual  clusterClients
	physical clusterClients
	// physicalConfig is the config physical was built from.
	physicalConfig *rest.Config
	// physicalClusterUID identifies the cluster physical reaches ("" when
	// it could not be read).
	physicalClusterUID string
	// virtualInformers and physicalInformers are started by setup once
	// every controller has asked for its informers.
	virtualInformers, physicalInformers *informers.Cluster
	// virtualMetadata holds metadata-only informers of the virtual
	// cluster, for events about objects the syncer does not otherwise
	// cache (a pod's ConfigMap appearing).
	virtualMetadata  metadatainformer.SharedInformerFactory
	physicalRecorder record.EventRecorderLogger
	// physicalHealth probes the physical apiserver; onPhysicalAnswers are
	// called, from its goroutine, when it answers again after an outage,
	// onPhysicalSilent when it stops answering. All are set up before
	// anything runs.
	physicalHealth    *clusterhealth.Prober
	onPhysicalAnswers []func()
	onPhysicalSilent  []func()
	// kubeletEndpoint gives virtual nodes their kubelet endpoint; nil when
	// the kubelet API is off.
	kubeletEndpoint node.KubeletEndpointFunc
	// hostPortTracker: see hostPorts.
	hostPortTracker *hostports.Tracker
	// twins shares status parts between the two pod caches; its physical
	// cache is set once the controllers have asked for their informers.
	twins *compact.TwinStatuses
}

// virtualPodScope is the scope of the virtual pods the binding may run.
func (e *syncerEnv) virtualPodScope() informers.Scope {
	return virtualPodScope(e.binding.Spec.ClusterID, e.twins)
}

func (e *syncerEnv) physicalAnswerChanged(answers bool) {
	hooks := e.onPhysicalAnswers
	if !answers {
		hooks = e.onPhysicalSilent
	}
	for _, fn := range hooks {
		fn()
	}
}

func setup(ctx context.Context, p *app.Process, opts Options) ([]app.Runnable, error) {
	if opts.Workers <= 0 {
		opts.Workers = 1
	}
	if opts.PodWorkers <= 0 {
		opts.PodWorkers = opts.Workers
	}
	if opts.NodeWorkers <= 0 {
		opts.NodeWorkers = opts.Workers
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	logger := klog.FromContext(ctx).WithValues("clusterBinding", opts.BindingName)
	ctx = klog.NewContext(ctx, logger)

	virtual, err := newClusterClients(p.Config)
	if err != nil {
		return nil, err
	}
	binding, err := virtual.Kubeocean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, opts.BindingName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading ClusterBinding %s: %w", opts.BindingName, err)
	}
	physical, physicalConfig, err := physicalClients(ctx, p, binding, opts)
	if err != nil {
		return nil, err
	}
	clusterUID, err := physicalClusterUID(ctx, physical.Kube)
	if err != nil {
		return nil, err
	}
	if err := refuseOtherCluster(binding, clusterUID); err != nil {
		return nil, err
	}
	logger.Info("Connected to the physical cluster", "clusterID", binding.Spec.ClusterID, "mountNamespace", binding.Spec.MountNamespace, "physicalClusterUID", clusterUID)

	recorder, stopRecorder := events.NewRecorder(ctx, physical.Kube, Component)
	env := &syncerEnv{
		opts: opts, process: p, binding: binding, virtual: virtual, physical: physical, physicalConfig: physicalConfig,
		physicalClusterUID: clusterUID, physicalRecorder: recorder,
		virtualInformers:  informers.NewCluster("virtual", virtual.ListWatchKube, virtual.ListWatchKubeocean, 0),
		physicalInformers: informers.NewCluster(binding.Name, physical.ListWatchKube, physical.ListWatchKubeocean, 0),
		twins:             &compact.TwinStatuses{},
	}
	virtualMetadata, err := metadata.NewForConfig(clusterhealth.WaitForAnswer(p.Config))
	if err != nil {
		stopRecorder()
		return nil, err
	}
	env.virtualMetadata = metadatainformer.NewSharedInformerFactory(virtualMetadata, 0)
	env.physicalHealth = clusterhealth.NewProber(clusterhealth.ProberOptions{
		Name: "physical", Client: physical.Kube.Discovery().RESTClient(), OnChange: env.physicalAnswerChanged,
	})
	kubelet, endpoints, err := kubeletAPI(env)
	if err != nil {
		stopRecorder()
		return nil, err
	}
	if endpoints != nil {
		env.kubeletEndpoint = endpoints.For
	}
	runnables, err := bottomUpControllers(env)
	if err == nil && kubelet != nil {
		runnables = append(runnables, kubeletRunnable(kubelet))
	}
	if err == nil {
		var topDown []app.Runnable
		topDown, err = topDownControllers(env)
		runnables = append(runnables, topDown...)
	}
	if err != nil {
		stopRecorder()
		return nil, err
	}

	// One check and one collector per binding: the manager may run several
	// syncers in one process. The collector reads informers the controllers
	// already asked for.
	p.Health.AddReadyz(serving.Check{Name: "informers-synced-" + binding.Name, Fn: env.informersSynced})
	collectors, err := env.bindingMetrics()
	if err != nil {
		stopRecorder()
		return nil, err
	}
	env.twins.Physical = env.physicalPodRecords().GetIndexer()
	return append(runnables,
		app.Runnable{Name: "informers", Run: func(ctx context.Context) error {
			// Started with the context that ends when any runnable fails, so
			// that Shutdown below has informers that stop to wait for.
			env.virtualInformers.Start(ctx)
			env.physicalInformers.Start(ctx)
			env.virtualMetadata.Start(ctx.Done())
			<-ctx.Done()
			for _, c := range collectors {
				p.Registry.Unregister(c)
			}
			env.virtualInformers.Shutdown()
			env.physicalInformers.Shutdown()
			env.virtualMetadata.Shutdown()
			stopRecorder()
			return nil
		}},
		app.Runnable{Name: "binding-watch", Run: env.watchBinding},
		app.Runnable{Name: "physical-prober", Run: env.physicalHealth.Run},
	), nil
}

// physicalClients builds clients from the binding's kubeconfig Secret.
func physicalClients(ctx context.Context, p *app.Process, binding *kubeoceanv1alpha1.ClusterBinding, opts Options) (clusterClients, *rest.Config, error) {
	build := func(config *rest.Config) (clusterClients, error) {
		p.Requests.Wrap(config, "physical")
		return newClusterClients(config)
	}
	cache := remotecluster.NewCache(remotecluster.SecretsFromClient(p.Kube.CoreV1()), build, remotecluster.Options{
		QPS: opts.PhysicalQPS, Burst: opts.PhysicalBurst, UserAgent: Component + "/" + binding.Name,
	})
	entry, err := cache.Get(ctx, binding.Spec.SecretRef.Namespace, binding.Spec.SecretRef.Name)
	if err != nil {
		return clusterClients{}, nil, fmt.Errorf("connecting to the physical cluster of %s: %w", binding.Name, err)
	}
	if err := remotecluster.Probe(ctx, entry.Clients.Kube); err != nil {
		return clusterClients{}, nil, fmt.Errorf("probing the physical cluster of %s: %w", binding.Name, err)
	}
	return entry.Clients, entry.Config, nil
}

// bindingMetrics registers the binding's metrics, read from the informers
// the controllers already asked for, and returns them for unregistering
// when the syncer stops.
func (e *syncerEnv) bindingMetrics() ([]prometheus.Collector, error) {
	virtualPods := e.virtualInformers.Kube(e.virtualPodScope()).Core().V1().Pods()
	physicalPods := e.physicalPods()
	virtualNodes := e.virtualInformers.Kube(ownedScope(e.binding.Spec.ClusterID, "")).Core().V1().Nodes().Lister()
	latency := newSyncLatency(e.binding.Name, virtualPods.Lister(), physicalPods.Lister(), virtualNodes)
	if _, err := physicalPods.Informer().AddEventHandler(latency.physicalHandler()); err != nil {
		return nil, err
	}
	if _, err := virtualPods.Informer().AddEventHandler(latency.virtualHandler()); err != nil {
		return nil, err
	}
	collectors := append(latency.collectors(), newBindingCollector(e.binding.Name, virtualNodes, e.physicalPodRecords().GetStore(), virtualPods.Informer().GetStore()))
	for i, c := range collectors {
		if err := e.process.Registry.Register(c); err != nil {
			for _, registered := range collectors[:i] {
				e.process.Registry.Unregister(registered)
			}
			return nil, fmt.Errorf("registering the metrics of %s: %w", e.binding.Name, err)
		}
	}
	return collectors, nil
}

func (e *syncerEnv) informersSynced(r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), syncCheckTimeout)
	defer cancel()
	if err := e.virtualInformers.WaitForCacheSync(ctx); err != nil {
		return err
	}
	return e.physicalInformers.WaitForCacheSync(ctx)
}

// watchBinding stops the syncer when its binding changes in a way the
// running controllers cannot follow (another Secret or mount namespace, or
// a node selector that scopes the physical node informer differently): the
// process exits and its Deployment, or the manager in in-process mode,
// starts it again with the new spec. Everything else (other node selector
// changes, default taint, deletion) the controllers follow as it happens.
func (e *syncerEnv) watchBinding(ctx context.Context) error {
	informer := e.virtualInformers.Kubeocean(bindingScope(e.opts.BindingName)).Kubeocean().V1alpha1().ClusterBindings().Informer()
	changed := make(chan struct{}, 1)
	registration, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) {
			b, ok := obj.(*kubeoceanv1alpha1.ClusterBinding)
			if ok && needsRestart(e.binding, b) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		},
	})
	if err != nil {
		return err
	}
	defer func() { _ = informer.RemoveEventHandler(registration) }()
	select {
	case <-ctx.Done():
		return nil
	case <-changed:
		return fmt.Errorf("ClusterBinding %s changed its secretRef, mountNamespace or the nodes its node selector scopes: restarting", e.opts.BindingName)
	}
}

// needsRestart reports whether a syncer started for running must restart to
// serve updated.
func needsRestart(running, updated *kubeoceanv1alpha1.ClusterBinding) bool {
	if updated.Spec.SecretRef != running.Spec.SecretRef || updated.Spec.MountNamespace != running.Spec.MountNamespace {
		return true
	}
	// A selector the syncer cannot evaluate keeps the running scope: the
	// node controller leaves every virtual node as it is until it is fixed,
	// and a restart would only drop the caches the fix needs.
	if len(validation.NodeSelector(field.NewPath("spec", "nodeSelector"), updated.Spec.NodeSelector)) > 0 {
		return false
	}
	return physicalNodeScope(updated.Spec.NodeSelector).LabelSelector != physicalNodeScope(running.Spec.NodeSelector).LabelSelector
}
