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

package node

import (
	"slices"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "bottomup-node"

// byNodeName indexes pods by spec.nodeName.
const byNodeName = "spec.nodeName"

// Options are the dependencies of the controller.
type Options struct {
	// BindingName and ClusterID identify the binding this syncer serves;
	// MountNamespace, with BindingName, tells the policies that lend to it
	// (ownership.PolicyLendsTo).
	BindingName    string
	ClusterID      string
	MountNamespace string

	// VirtualNodes writes virtual nodes; VirtualPods evicts pods from nodes
	// being removed.
	VirtualNodesClient corev1client.NodesGetter
	VirtualPodsClient  corev1client.PodsGetter

	// Bindings is the virtual cluster's ClusterBinding informer.
	Bindings kubeoceaninformers.ClusterBindingInformer
	// Policies is the physical cluster's ResourceLeasingPolicy informer.
	Policies kubeoceaninformers.ResourceLeasingPolicyInformer
	// PhysicalNodes are the physical cluster's nodes.
	PhysicalNodes corev1informers.NodeInformer
	// ForeignPods are the physical pods that hold resources and that the
	// binding does not run (other bindings' included: they run on what
	// their binding was lent), stored as *compact.PodUsage (the wiring
	// scopes them and compacts them with compact.ForeignPod). The
	// controller sums them per node from the informer's events and needs no
	// index on it.
	ForeignPods cache.SharedIndexInformer
	// VirtualNodes are this binding's virtual nodes (label-scoped).
	VirtualNodes corev1informers.NodeInformer
	// VirtualPods are the virtual cluster's pods, to drain virtual nodes:
	// at least those bound to the binding's virtual nodes.
	VirtualPods corev1informers.PodInformer

	// PhysicalAnswers tells whether the physical apiserver answered lately
	// (a clusterhealth.Prober). While it does not, the cached physical
	// node's Ready condition is stale: the virtual node's is left to the
	// virtual cluster's node lifecycle controller, which marks it Unknown
	// once the Lease expires. nil means always.
	PhysicalAnswers func() bool
	// PhysicalLastAnswer is when the physical apiserver last answered (the
	// Prober's LastAnswer): the virtual nodes' outage condition names it.
	// nil names no time.
	PhysicalLastAnswer func() time.Time

	Recorder record.EventRecorder
	Metrics  *controller.Metrics
	Clock    clock.WithTicker
	// KubeletEndpoint, when set, gives each virtual node the kubelet
	// endpoint the syncer serves for it; nil copies the physical node's.
	KubeletEndpoint KubeletEndpointFunc
	// DrainTimeout is how long a drain asks pods to leave through the
	// eviction API, which PodDisruptionBudgets may refuse, counted from the
	// deletion taint's timeAdded; after it the pods left are deleted. 0
	// deletes them at once.
	DrainTimeout time.Duration
	// MaxNodeRemovalFraction is the share of the binding's virtual nodes
	// (0 to 1) one configuration change may remove without confirmation;
	// 0 means DefaultMaxNodeRemovalFraction, 1 or more turns the share
	// rule off. Nodes that run pods always wait for confirmation.
	MaxNodeRemovalFraction float64
	// PhysicalClusterUID is the UID of the kube-system namespace of the
	// cluster the physical clients reach, read at start; "" skips the
	// identity check.
	PhysicalClusterUID string
	// PhysicalNodesClient reads a physical node the selector-scoped cache
	// does not hold, to tell a deleted node from a deselected one; nil
	// takes every absent node for deleted.
	PhysicalNodesClient corev1client.NodesGetter
	// BindingsClient writes the binding's NodeRemovalHeld condition; nil
	// writes none.
	BindingsClient kubeoceanclient.ClusterBindingsGetter
	// StatusUpdateInterval is the shortest time between two status writes
	// of one virtual node; changes in between are written together at its
	// end. 0 means DefaultStatusUpdateInterval.
	StatusUpdateInterval time.Duration
}

// Controller reconciles physical node names into virtual nodes.
type Controller struct {
	*controller.Controller[string]

	bindingName, clusterID string
	borrower               borrower
	nodesClient            corev1client.NodesGetter
	podsClient             corev1client.PodsGetter
	bindings               kubeoceanlisters.ClusterBindingLister
	policies               kubeoceanlisters.ResourceLeasingPolicyLister
	physicalNodes          corev1listers.NodeLister
	foreignUsage           *compact.UsageByNode
	virtualNodes           corev1listers.NodeLister
	virtualPods            cache.Indexer
	recorder               record.EventRecorder
	clock                  clock.WithTicker
	physicalLastAnswer     func() time.Time
	physicalAnswers        func() bool
	kubeletEndpoint        KubeletEndpointFunc
	drainTimeout           time.Duration
	maxRemovalFraction     float64
	physicalClusterUID     string
	physicalNodesClient    corev1client.NodesGetter
	bindingsClient         kubeoceanclient.ClusterBindingsGetter
	// held are the nodes whose configuration-driven removal waits for the
	// operator, by configuration token; share caches what one removes.
	held  *frozenNodes
	share shareCount
	// heldReported is set once the condition was written since start.
	heldReported atomic.Bool
	// frozen are the nodes left as they are while a spec they depend on
	// cannot be evaluated.
	frozen *frozenNodes
	// writes keeps writes against the latest resourceVersion and paces
	// status writes.
	writes *writes
}

// New builds the controller and registers its event handlers.
func New(opts Options) (*Controller, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.StatusUpdateInterval <= 0 {
		opts.StatusUpdateInterval = DefaultStatusUpdateInterval
	}
	if opts.MaxNodeRemovalFraction <= 0 {
		opts.MaxNodeRemovalFraction = DefaultMaxNodeRemovalFraction
	}
	if opts.PhysicalAnswers == nil {
		opts.PhysicalAnswers = func() bool { return true }
	}
	if err := addNodeNameIndex(opts.VirtualPods.Informer(), podNodeName); err != nil {
		return nil, err
	}
	c := &Controller{
		bindingName:     opts.BindingName,
		borrower:        borrower{name: opts.BindingName, mountNamespace: opts.MountNamespace},
		clusterID:       opts.ClusterID,
		nodesClient:     opts.VirtualNodesClient,
		podsClient:      opts.VirtualPodsClient,
		bindings:        opts.Bindings.Lister(),
		policies:        opts.Policies.Lister(),
		physicalNodes:   opts.PhysicalNodes.Lister(),
		foreignUsage:    compact.NewUsageByNode(),
		virtualNodes:    opts.VirtualNodes.Lister(),
		virtualPods:     opts.VirtualPods.Informer().GetIndexer(),
		recorder:        opts.Recorder,
		clock:           opts.Clock,
		physicalAnswers: opts.PhysicalAnswers,
		kubeletEndpoint: opts.KubeletEndpoint,
		drainTimeout:    opts.DrainTimeout,
		frozen:          newFrozenNodes(),
		held:            newFrozenNodes(),
		writes:          newWrites(opts.StatusUpdateInterval),

		maxRemovalFraction:  opts.MaxNodeRemovalFraction,
		physicalClusterUID:  opts.PhysicalClusterUID,
		physicalNodesClient: opts.PhysicalNodesClient,
		bindingsClient:      opts.BindingsClient,
	}
	c.physicalLastAnswer = opts.PhysicalLastAnswer
	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.sync,
		Metrics:   opts.Metrics,
		Clock:     opts.Clock,
		HasSynced: []cache.InformerSynced{
			opts.Bindings.Informer().HasSynced, opts.Policies.Informer().HasSynced,
			opts.PhysicalNodes.Informer().HasSynced, opts.ForeignPods.HasSynced,
			opts.VirtualNodes.Informer().HasSynced, opts.VirtualPods.Informer().HasSynced,
		},
	})
	return c, c.registerHandlers(opts)
}

func addNodeNameIndex(informer cache.SharedIndexInformer, nodeName func(obj any) string) error {
	if _, ok := informer.GetIndexer().GetIndexers()[byNodeName]; ok {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{byNodeName: func(obj any) ([]string, error) {
		if name := nodeName(obj); name != "" {
			return []string{name}, nil
		}
		return nil, nil
	}})
}

func podNodeName(obj any) string {
	if pod, ok := obj.(*corev1.Pod); ok {
		return pod.Spec.NodeName
	}
	return ""
}

func (c *Controller) registerHandlers(opts Options) error {
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{opts.Bindings.Informer(), controller.Handler[*kubeoceanv1alpha1.ClusterBinding, string]{
			Enqueue: c.Enqueue, Keys: c.allNodeKeys,
			Filter: func(b *kubeoceanv1alpha1.ClusterBinding) bool { return b.Name == c.bindingName },
		}},
		{opts.Policies.Informer(), controller.Handler[*kubeoceanv1alpha1.ResourceLeasingPolicy, string]{
			Enqueue: c.Enqueue, Keys: c.policyNodeKeys,
			Filter: c.borrower.lentBy,
		}},
		{opts.PhysicalNodes.Informer(), controller.Handler[*corev1.Node, string]{
			Enqueue: c.Enqueue, Keys: func(n *corev1.Node) []string { return []string{n.Name} },
			Changed: physicalNodeChanged,
		}},
		{opts.ForeignPods, usageHandler{sums: c.foreignUsage, next: controller.Handler[*compact.PodUsage, string]{
			Enqueue: c.Enqueue, Keys: usageNodeKeys,
			Changed: func(old, updated *compact.PodUsage) bool { return !old.SameUsage(updated) },
		}}},
		{opts.VirtualNodes.Informer(), controller.Handler[*corev1.Node, string]{
			Enqueue: c.Enqueue, Keys: physicalNameOf,
		}},
		{opts.VirtualPods.Informer(), controller.Handler[*corev1.Pod, string]{
			Enqueue: c.Enqueue, Keys: c.drainingNodeKeys,
		}},
	}
	for _, h := range handlers {
		if err := c.Watch(h.informer, h.handler); err != nil {
			return err
		}
	}
	return nil
}

// EnqueueAll reconciles every node of the binding, as when the physical
// apiserver answers again after an outage.
func (c *Controller) EnqueueAll() {
	for _, key := range c.allNodeKeys(nil) {
		c.Enqueue(key)
	}
}

// allNodeKeys: a binding change may affect every physical node and every
// virtual node of the binding.
func (c *Controller) allNodeKeys(*kubeoceanv1alpha1.ClusterBinding) []string {
	keys := sets.New[string]()
	if nodes, err := c.physicalNodes.List(labels.Everything()); err == nil {
		for _, n := range nodes {
			keys.Insert(n.Name)
		}
	}
	if vnodes, err := c.virtualNodes.List(labels.Everything()); err == nil {
		for _, n := range vnodes {
			keys.Insert(physicalNameOf(n)...)
		}
	}
	return sets.List(keys)
}

// policyNodeKeys are exactly the nodes a policy change can affect: those
// its selector may pick (all of them when it cannot be parsed: the policy
// freezes them) and those it lends now.
func (c *Controller) policyNodeKeys(policy *kubeoceanv1alpha1.ResourceLeasingPolicy) []string {
	keys := sets.New[string]()
	if nodes, err := c.physicalNodes.List(labels.Everything()); err == nil {
		for _, n := range nodes {
			if maySelect(policy.Spec.NodeSelector, n) {
				keys.Insert(n.Name)
			}
		}
	}
	if vnodes, err := c.virtualNodes.List(labels.Everything()); err == nil {
		for _, n := range vnodes {
			if n.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy] == policy.Name {
				keys.Insert(physicalNameOf(n)...)
			}
		}
	}
	return sets.List(keys)
}

// drainingNodeKeys maps a virtual pod to its node only while that node is
// being drained: that is when a pod going away matters to this controller.
func (c *Controller) drainingNodeKeys(pod *corev1.Pod) []string {
	if pod.Spec.NodeName == "" {
		return nil
	}
	vnode, err := c.virtualNodes.Get(pod.Spec.NodeName)
	if err != nil || findTaint(vnode.Spec.Taints, kubeoceanv1alpha1.TaintVirtualNodeDeleting) == nil {
		return nil
	}
	return physicalNameOf(vnode)
}

func physicalNameOf(vnode *corev1.Node) []string {
	if name := kubeoceanv1alpha1.PhysicalNodeNameOf(vnode); name != "" {
		return []string{name}
	}
	return nil
}

// physicalNodeChanged drops updates that only move heartbeat times: a
// kubelet (or kwok) posts one per node every few seconds to minutes, and
// none of them can change the virtual node.
func physicalNodeChanged(old, updated *corev1.Node) bool {
	if updated.DeletionTimestamp != nil || !equality.Semantic.DeepEqual(old.Labels, updated.Labels) ||
		!equality.Semantic.DeepEqual(old.Spec, updated.Spec) {
		return true
	}
	return !equality.Semantic.DeepEqual(withoutHeartbeats(old.Status), withoutHeartbeats(updated.Status))
}

func withoutHeartbeats(status corev1.NodeStatus) corev1.NodeStatus {
	status.Conditions = slices.Clone(status.Conditions)
	for i := range status.Conditions {
		status.Conditions[i].LastHeartbeatTime = metav1.Time{}
	}
	return status
}

func usageNodeKeys(u *compact.PodUsage) []string {
	if u.NodeName == "" {
		return nil
	}
	return []string{u.NodeName}
}

// virtualNodeName is the name of the virtual twin of a physical node.
func (c *Controller) virtualNodeName(physical string) string {
	return kubeoceanv1alpha1.VirtualNodeName(c.clusterID, physical)
}
