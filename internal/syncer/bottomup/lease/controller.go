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

package lease

import (
	"errors"
	"fmt"
	"maps"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	coordinationinformers "k8s.io/client-go/informers/coordination/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller, its queue and its metrics.
const ControllerName = "bottomup-lease"

const (
	// DefaultRenewInterval is how often a Lease is renewed, as a kubelet
	// does (a quarter of the lease duration).
	DefaultRenewInterval = 10 * time.Second
	// DefaultLeaseDuration is written to spec.leaseDurationSeconds, the
	// kubelet default.
	DefaultLeaseDuration = 40 * time.Second
)

// Options are the dependencies of the lease controller.
type Options struct {
	// ClusterID is the binding's cluster ID; the leases carry it as the
	// kubeocean.io/cluster-id label.
	ClusterID string
	// Client writes Leases in the virtual cluster.
	Client coordinationv1client.LeasesGetter
	// VirtualNodes is an informer on the binding's virtual nodes (scoped by
	// the wiring to kubeocean.io/managed-by=kubeocean and
	// kubeocean.io/cluster-id=<ClusterID>).
	VirtualNodes corev1informers.NodeInformer
	// Leases is an informer on the virtual cluster's Leases in
	// kube-node-lease, scoped by the wiring to the same labels.
	Leases coordinationinformers.LeaseInformer
	// PhysicalNodes is an informer on the physical cluster's nodes.
	PhysicalNodes corev1informers.NodeInformer
	// PhysicalAnswers tells whether the physical apiserver answered lately
	// (a clusterhealth.Prober). While it does not, Leases are still renewed
	// from the physical nodes' last known state (see renewsDuringOutage),
	// up to OutageRenewalLimit. nil means always.
	PhysicalAnswers func() bool
	// PhysicalLastAnswer is when the physical apiserver last answered (the
	// Prober's LastAnswer); needed with OutageRenewalLimit only.
	PhysicalLastAnswer func() time.Time
	// OutageRenewalLimit stops the renewals once the physical apiserver
	// has not answered for that long, so the virtual cluster evicts the
	// pods by their tolerations; zero renews throughout an outage.
	OutageRenewalLimit time.Duration
	// RenewInterval is how often a Lease is renewed; default
	// DefaultRenewInterval. It must be shorter than LeaseDuration.
	RenewInterval time.Duration
	// LeaseDuration is written to spec.leaseDurationSeconds; default
	// DefaultLeaseDuration.
	LeaseDuration time.Duration
	// Metrics receives the controller's metrics; nil records none.
	Metrics *controller.Metrics
	// Clock stamps renewals and drives requeues; nil is the real clock.
	Clock clock.WithTicker
}

// Controller keeps the Leases of one binding's virtual nodes, keyed by
// virtual node name (which is also the Lease name).
type Controller struct {
	*controller.Controller[string]

	clusterID     string
	client        coordinationv1client.LeasesGetter
	virtualNodes  corev1listers.NodeLister
	leases        coordinationlisters.LeaseLister
	physicalNodes corev1listers.NodeLister
	answers       func() bool
	lastAnswer    func() time.Time
	outageLimit   time.Duration
	renewInterval time.Duration
	leaseDuration time.Duration
	clock         clock.PassiveClock
}

// New builds the controller and registers its event handlers; it starts
// nothing. Run it with Run(ctx, workers) after the informers are started.
func New(opts Options) (*Controller, error) {
	if err := opts.defaultAndValidate(); err != nil {
		return nil, err
	}
	c := &Controller{
		clusterID:     opts.ClusterID,
		client:        opts.Client,
		virtualNodes:  opts.VirtualNodes.Lister(),
		leases:        opts.Leases.Lister(),
		physicalNodes: opts.PhysicalNodes.Lister(),
		answers:       opts.PhysicalAnswers,
		lastAnswer:    opts.PhysicalLastAnswer,
		outageLimit:   opts.OutageRenewalLimit,
		renewInterval: opts.RenewInterval,
		leaseDuration: opts.LeaseDuration,
		clock:         opts.Clock,
	}

	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.reconcile,
		Metrics:   opts.Metrics,
		Clock:     opts.Clock,
	})
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{opts.VirtualNodes.Informer(), c.virtualNodeHandler()},
		{opts.Leases.Informer(), c.leaseHandler()},
		{opts.PhysicalNodes.Informer(), c.physicalNodeHandler()},
	}
	for _, h := range handlers {
		if err := c.Watch(h.informer, h.handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (opts *Options) defaultAndValidate() error {
	if opts.RenewInterval == 0 {
		opts.RenewInterval = DefaultRenewInterval
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = DefaultLeaseDuration
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.PhysicalAnswers == nil {
		opts.PhysicalAnswers = func() bool { return true }
	}
	var errs []error
	if opts.OutageRenewalLimit < 0 || (opts.OutageRenewalLimit > 0 && opts.PhysicalLastAnswer == nil) {
		errs = append(errs, errors.New("OutageRenewalLimit must not be negative, and needs PhysicalLastAnswer"))
	}
	if opts.PhysicalLastAnswer == nil {
		opts.PhysicalLastAnswer = func() time.Time { return time.Time{} }
	}
	if opts.ClusterID == "" {
		errs = append(errs, errors.New("ClusterID is required"))
	}
	if opts.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if opts.VirtualNodes == nil || opts.Leases == nil || opts.PhysicalNodes == nil {
		errs = append(errs, errors.New("VirtualNodes, Leases and PhysicalNodes are required"))
	}
	if opts.RenewInterval < 0 || opts.LeaseDuration < time.Second || opts.RenewInterval >= opts.LeaseDuration {
		errs = append(errs, fmt.Errorf("RenewInterval (%v) must be positive and shorter than LeaseDuration (%v), which must be at least 1s",
			opts.RenewInterval, opts.LeaseDuration))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("lease controller options: %w", err)
	}
	return nil
}

// virtualNodeHandler reconciles a virtual node's Lease when the node appears,
// goes, or is pointed at another physical node. Status updates, the bulk of
// node events, change nothing here.
func (c *Controller) virtualNodeHandler() controller.Handler[*corev1.Node, string] {
	return controller.Handler[*corev1.Node, string]{
		Enqueue: c.Enqueue,
		Keys:    func(node *corev1.Node) []string { return []string{node.Name} },
		Filter:  c.ownsVirtualNode,
		Changed: func(oldNode, newNode *corev1.Node) bool {
			return kubeoceanv1alpha1.PhysicalNodeNameOf(oldNode) != kubeoceanv1alpha1.PhysicalNodeNameOf(newNode) ||
				c.ownsVirtualNode(oldNode) != c.ownsVirtualNode(newNode)
		},
	}
}

// leaseHandler restores a Lease someone deleted or rewrote. Our own renewals
// only move spec.renewTime; the requeue already covers them.
func (c *Controller) leaseHandler() controller.Handler[*coordinationv1.Lease, string] {
	return controller.Handler[*coordinationv1.Lease, string]{
		Enqueue: c.Enqueue,
		Keys:    func(lease *coordinationv1.Lease) []string { return []string{lease.Name} },
		Filter: func(lease *coordinationv1.Lease) bool {
			return lease.Namespace == corev1.NamespaceNodeLease && c.ownsLease(lease)
		},
		Changed: writtenFieldsChanged,
	}
}

// writtenFieldsChanged tells whether what desiredLease sets of a Lease
// (labels, owner references, holder, duration, acquire time) or its
// deletion changed: what a reconcile would restore. It runs on every
// renewal's event, so it compares those fields only.
func writtenFieldsChanged(oldLease, newLease *coordinationv1.Lease) bool {
	return !maps.Equal(oldLease.Labels, newLease.Labels) ||
		!equality.Semantic.DeepEqual(oldLease.OwnerReferences, newLease.OwnerReferences) ||
		!ptr.Equal(oldLease.Spec.HolderIdentity, newLease.Spec.HolderIdentity) ||
		!ptr.Equal(oldLease.Spec.LeaseDurationSeconds, newLease.Spec.LeaseDurationSeconds) ||
		!oldLease.Spec.AcquireTime.Equal(newLease.Spec.AcquireTime) ||
		(oldLease.DeletionTimestamp == nil) != (newLease.DeletionTimestamp == nil)
}

// physicalNodeHandler renews at once when a physical node turns Ready and
// stops the renewals when it turns NotReady or goes. Heartbeats that keep
// the Ready status as it was are dropped.
func (c *Controller) physicalNodeHandler() controller.Handler[*corev1.Node, string] {
	return controller.Handler[*corev1.Node, string]{
		Enqueue: c.Enqueue,
		Keys: func(node *corev1.Node) []string {
			return []string{kubeoceanv1alpha1.VirtualNodeName(c.clusterID, node.Name)}
		},
		Filter: func(node *corev1.Node) bool {
			_, err := c.virtualNodes.Get(kubeoceanv1alpha1.VirtualNodeName(c.clusterID, node.Name))
			return err == nil
		},
		Changed: func(oldNode, newNode *corev1.Node) bool {
			return nodeReady(oldNode) != nodeReady(newNode)
		},
	}
}

// EnqueueAll reconciles the Lease of every virtual node of the binding, as
// when the physical apiserver answers again after an outage.
func (c *Controller) EnqueueAll() {
	nodes, err := c.virtualNodes.List(labels.Everything())
	if err != nil {
		return
	}
	for _, node := range nodes {
		if c.ownsVirtualNode(node) {
			c.Enqueue(node.Name)
		}
	}
}

// ownsVirtualNode tells the binding's virtual nodes from any other node.
func (c *Controller) ownsVirtualNode(node *corev1.Node) bool {
	return node.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
		node.Labels[kubeoceanv1alpha1.LabelClusterID] == c.clusterID
}

// ownsLease tells the Leases this controller wrote from those of kubelets,
// kwok or another binding, which it never touches.
func (c *Controller) ownsLease(lease *coordinationv1.Lease) bool {
	return lease.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
		lease.Labels[kubeoceanv1alpha1.LabelClusterID] == c.clusterID
}

// nodeReady reports whether node is Ready and not being deleted.
func nodeReady(node *corev1.Node) bool {
	if node == nil || node.DeletionTimestamp != nil {
		return false
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}
