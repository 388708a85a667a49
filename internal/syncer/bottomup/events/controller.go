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

package events

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Name names the controller, its queue and its metrics.
const Name = "bottomup-events"

// DefaultStartMargin is Options.StartMargin 0.
const DefaultStartMargin = 2 * time.Minute

// writtenCounts is how many virtual events' counts are remembered; one
// forgotten is read again before its next write.
const writtenCounts = 8192

// Options are the dependencies of the controller. All but Limits,
// Registry, Metrics, Clock and StartMargin are required.
type Options struct {
	// BindingName labels the dropped-events metric.
	BindingName string
	// ClusterID and BindingUID are the binding's identity (package
	// ownership): only physical pods carrying it have their events
	// recorded.
	ClusterID  string
	BindingUID types.UID
	// MountNamespace holds the binding's physical pods and their events.
	MountNamespace string
	// Component is the syncer's own reporting component: events it
	// reported in the physical cluster are not recorded back.
	Component string
	// PhysicalClient lists and watches events in MountNamespace and, of
	// nodes, in NodeEventNamespace.
	PhysicalClient corev1client.EventsGetter
	// VirtualClient reads, creates and patches the virtual events.
	VirtualClient corev1client.EventsGetter
	// PhysicalPods are the binding's physical pods; VirtualPods the
	// virtual pods on its nodes; VirtualNodes its virtual nodes.
	PhysicalPods corev1informers.PodInformer
	VirtualPods  corev1informers.PodInformer
	VirtualNodes corev1informers.NodeInformer
	// Limits bound the virtual writes; zero fields take the defaults.
	Limits Limits
	// Registry receives the dropped-events counter; nil registers none.
	Registry prometheus.Registerer
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Clock tells now for the rate limits and StartMargin.
	Clock clock.PassiveClock
	// StartMargin: an aggregate of physical events that all happened more
	// than this long before the controller was built, and that has no
	// virtual event, is not recorded: it was recorded and has expired in
	// the virtual cluster, or happened while no syncer ran (docs/events.md).
	StartMargin time.Duration
}

// key is one aggregate of physical events (aggregateOf), of pods or of
// nodes.
type key struct {
	node      bool
	aggregate string
}

// Controller records the physical events of the binding's pods and lent
// nodes on their virtual twins.
type Controller struct {
	*controller.Controller[key]

	clusterID      string
	owner          ownership.Owner
	mountNamespace string
	component      string
	virtualClient  corev1client.EventsGetter
	physicalPods   corev1listers.PodLister
	virtualPods    corev1listers.PodLister
	virtualNodes   corev1listers.NodeLister
	podEvents      cache.SharedIndexInformer
	nodeEvents     cache.SharedIndexInformer
	// dependencies are the caches the event filters read: they must be
	// filled before the event informers list.
	dependencies []cache.InformerSynced
	limiter      *limiter
	dropped      *prometheus.CounterVec
	binding      string
	clock        clock.PassiveClock
	staleBefore  time.Time
	// written remembers the count of each virtual event as last written
	// or read (namespace/name → int32).
	written *lru.Cache
	// droppedCounts remembers how many occurrences of each virtual event
	// were counted as dropped (namespace/name → int32).
	droppedCounts *lru.Cache
}

// New builds the controller and its event informers; it starts nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.StartMargin <= 0 {
		opts.StartMargin = DefaultStartMargin
	}
	c := &Controller{
		clusterID:      opts.ClusterID,
		owner:          ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		mountNamespace: opts.MountNamespace,
		component:      opts.Component,
		virtualClient:  opts.VirtualClient,
		physicalPods:   opts.PhysicalPods.Lister(),
		virtualPods:    opts.VirtualPods.Lister(),
		virtualNodes:   opts.VirtualNodes.Lister(),
		dependencies: []cache.InformerSynced{
			opts.PhysicalPods.Informer().HasSynced, opts.VirtualPods.Informer().HasSynced, opts.VirtualNodes.Informer().HasSynced,
		},
		limiter:       newLimiter(opts.Limits),
		binding:       opts.BindingName,
		clock:         opts.Clock,
		staleBefore:   opts.Clock.Now().Add(-opts.StartMargin),
		written:       lru.New(writtenCounts),
		droppedCounts: lru.New(writtenCounts),
	}
	dropped, err := registerDropped(opts.Registry)
	if err != nil {
		return nil, err
	}
	c.dropped = dropped
	c.podEvents = newEventInformer(opts.PhysicalClient, opts.MountNamespace, "Pod", opts.Component, c.keepPodEvent)
	c.nodeEvents = newEventInformer(opts.PhysicalClient, NodeEventNamespace, "Node", opts.Component, c.keepNodeEvent)
	c.Controller = controller.New(controller.Options[key]{
		Name: Name, Reconcile: c.reconcile, Metrics: opts.Metrics,
		HasSynced: c.dependencies,
	})
	for _, watched := range []struct {
		informer cache.SharedIndexInformer
		node     bool
	}{{c.podEvents, false}, {c.nodeEvents, true}} {
		node := watched.node
		if err := c.Watch(watched.informer, controller.Handler[*corev1.Event, key]{
			Enqueue: c.Enqueue,
			Keys:    func(e *corev1.Event) []key { return []key{{node: node, aggregate: aggregateOf(e)}} },
		}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.BindingUID == "" || o.MountNamespace == "" || o.Component == "" {
		errs = append(errs, errors.New("ClusterID, BindingUID, MountNamespace and Component are required"))
	}
	if o.PhysicalClient == nil || o.VirtualClient == nil {
		errs = append(errs, errors.New("PhysicalClient and VirtualClient are required"))
	}
	if o.PhysicalPods == nil || o.VirtualPods == nil || o.VirtualNodes == nil {
		errs = append(errs, errors.New("PhysicalPods, VirtualPods and VirtualNodes informers are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("events: %w", err)
	}
	return nil
}

// registerDropped registers the dropped-events counter, or finds the one
// another binding's syncer in this process registered.
func registerDropped(registry prometheus.Registerer) (*prometheus.CounterVec, error) {
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: kubeoceanv1alpha1.MetricEventsDropped,
		Help: "Occurrences of physical events not recorded on their virtual pod or node, by binding and reason: a new virtual event found a token bucket empty.",
	}, []string{"binding", "reason"})
	if registry == nil {
		return dropped, nil
	}
	if err := registry.Register(dropped); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*prometheus.CounterVec); ok {
				return existing, nil
			}
		}
		return nil, fmt.Errorf("events: registering %s: %w", kubeoceanv1alpha1.MetricEventsDropped, err)
	}
	return dropped, nil
}

// Run waits until the caches the event filters read are filled, starts
// the event informers, and runs the workers until ctx ends. The filters
// decide as events are decoded, so an event listed before its pod was
// known would be dropped for good.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx).WithValues("controller", Name)
	if !cache.WaitForCacheSync(ctx.Done(), c.dependencies...) {
		logger.Info("Stopped before the caches synced")
		return nil
	}
	go c.podEvents.RunWithContext(ctx)
	go c.nodeEvents.RunWithContext(ctx)
	return c.Controller.Run(ctx, workers)
}

// Cached is how many physical events the controller holds, for tests and
// debugging.
func (c *Controller) Cached() int {
	return len(c.podEvents.GetStore().ListKeys()) + len(c.nodeEvents.GetStore().ListKeys())
}

// ownEvent tells the events the syncer itself reported in the physical
// cluster (a pod it deleted, a quota that refused one), which are not
// recorded back: the field selector leaves them out, and this catches
// those that name the syncer only as reporting controller.
func (c *Controller) ownEvent(e *corev1.Event) bool {
	return e.Source.Component == c.component || e.ReportingController == c.component
}

// keepPodEvent keeps an event about one of the binding's physical pods:
// in the mount namespace, naming a pod of the binding's pod cache by name
// and UID. Names alone prove nothing: an event may name a pod that has
// since been replaced, or be written by anyone who may create events.
func (c *Controller) keepPodEvent(e *corev1.Event) bool {
	o := e.InvolvedObject
	if c.ownEvent(e) || o.Kind != "Pod" || e.Namespace != c.mountNamespace || o.Namespace != c.mountNamespace {
		return false
	}
	pod, err := c.physicalPods.Pods(o.Namespace).Get(o.Name)
	return err == nil && pod.UID == o.UID && c.owner.Owns(pod)
}

// keepNodeEvent keeps an event about a physical node the binding lends:
// one of its virtual nodes stands for it.
func (c *Controller) keepNodeEvent(e *corev1.Event) bool {
	return !c.ownEvent(e) && e.InvolvedObject.Kind == "Node" && c.virtualNodeOf(e.InvolvedObject.Name) != nil
}

// eventIndex holds the physical events by aggregate.
const eventIndex = "aggregate"

// slim keeps of an event what aggregates and records it.
func slim(obj any) (any, error) {
	if e, ok := obj.(*corev1.Event); ok {
		e.ManagedFields, e.Annotations, e.Labels, e.OwnerReferences = nil, nil, nil, nil
		e.Related = nil
	}
	return obj, nil
}

// listOptions scopes an event informer by kind, leaving out the syncer's
// own events.
func listOptions(kind, component string) func(*metav1.ListOptions) {
	return func(opts *metav1.ListOptions) {
		opts.FieldSelector = "involvedObject.kind=" + kind + ",source!=" + component
	}
}
