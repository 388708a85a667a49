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

package podstatus

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Name names the controller, its queue and its metrics.
const Name = "bottomup-podstatus"

// Options are the dependencies of the controller. All but Metrics and Clock
// are required.
type Options struct {
	// ClusterID is the binding's cluster ID; it shows in logs.
	ClusterID string
	// BindingUID, with ClusterID, is the identity of the binding's
	// physical pods (package ownership): only pods carrying it are synced
	// or deleted as orphans.
	BindingUID types.UID
	// MountNamespace is the physical namespace the binding's pods live in.
	MountNamespace string
	// PhysicalClient deletes orphaned physical pods.
	PhysicalClient corev1client.PodsGetter
	// VirtualClient confirms a missing virtual pod with a live GET, writes
	// virtual pod status and patches the mapping annotations. Of the pod
	// UpdateStatus returns, the controller reads nothing (the syncer's
	// client asks for its metadata only, compact.LeanWrites).
	VirtualClient corev1client.PodsGetter
	// PhysicalPods should be scoped to MountNamespace and the binding's
	// identity (ownership.Owner.Selector); other pods are ignored anyway.
	PhysicalPods corev1informers.PodInformer
	// VirtualPods must include every virtual pod mapped to this binding.
	VirtualPods corev1informers.PodInformer
	// Recorder records events on physical pods, so it must write to the
	// physical cluster.
	Recorder record.EventRecorder
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Clock stamps kubeocean.io/last-sync-time; default the real clock. The
	// queue's backoff runs on real time.
	Clock clock.PassiveClock
}

// Controller reconciles physical pods, keyed by their namespace/name.
type Controller struct {
	*controller.Controller[cache.ObjectName]

	clusterID      string
	owner          ownership.Owner
	mountNamespace string
	physicalClient corev1client.PodsGetter
	virtualClient  corev1client.PodsGetter
	physicalPods   corev1listers.PodLister
	virtualPods    corev1listers.PodLister
	recorder       record.EventRecorder
	clock          clock.PassiveClock
	lag            *cacheLag
}

// New builds the controller and registers its event handlers; it starts
// nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		clusterID:      opts.ClusterID,
		owner:          ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		mountNamespace: opts.MountNamespace,
		physicalClient: opts.PhysicalClient,
		virtualClient:  opts.VirtualClient,
		physicalPods:   opts.PhysicalPods.Lister(),
		virtualPods:    opts.VirtualPods.Lister(),
		recorder:       opts.Recorder,
		clock:          opts.Clock,
		lag:            newCacheLag(),
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Controller = controller.New(controller.Options[cache.ObjectName]{
		Name:      Name,
		Reconcile: c.reconcile,
		// Deletions are decided from the virtual pod cache: never before it
		// has synced.
		HasSynced: []cache.InformerSynced{opts.PhysicalPods.Informer().HasSynced, opts.VirtualPods.Informer().HasSynced},
		Metrics:   opts.Metrics,
	})

	if err := c.Watch(opts.PhysicalPods.Informer(), controller.Handler[*corev1.Pod, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    controller.ObjectKeys[*corev1.Pod],
		Filter:  c.isManaged,
	}); err != nil {
		return nil, err
	}
	// Every change of a virtual pod re-checks its physical pod (the one
	// its mapping names, or, before the mapping is recorded, the one the
	// name rule gives): a deletion or a new UID may end the mapping, and a
	// status written by someone else is put back in line with the physical
	// pod. The cache holds only pods on this binding's virtual nodes.
	if err := c.Watch(opts.VirtualPods.Informer(), controller.Handler[*corev1.Pod, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    c.physicalKeys,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.BindingUID == "" {
		errs = append(errs, errors.New("ClusterID and BindingUID are required"))
	}
	if o.MountNamespace == "" {
		errs = append(errs, errors.New("MountNamespace is required"))
	}
	if o.PhysicalClient == nil || o.VirtualClient == nil {
		errs = append(errs, errors.New("PhysicalClient and VirtualClient are required"))
	}
	if o.PhysicalPods == nil || o.VirtualPods == nil {
		errs = append(errs, errors.New("PhysicalPods and VirtualPods informers are required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("Recorder is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("podstatus: %w", err)
	}
	return nil
}

// isManaged tells the physical pods this controller owns: those this
// binding created in its mount namespace, carrying its identity. Another
// binding (of this or another virtual cluster) may share the namespace;
// its pods name virtual pods we do not have, and would look orphaned. The
// informer is scoped to our pods already; the check keeps a wider informer
// from making us delete anyone else's. Pods of older versions, without an
// identity, are left to the top-down side, which adopts those its virtual
// pods prove to be ours.
func (c *Controller) isManaged(pod *corev1.Pod) bool {
	return pod.Namespace == c.mountNamespace && c.owner.Owns(pod)
}

// physicalKeys maps a virtual pod to the physical pod its annotations name,
// if that lives in this binding's mount namespace, or, before they name
// one, to where the name rule puts it.
func (c *Controller) physicalKeys(virtual *corev1.Pod) []cache.ObjectName {
	namespace, name, recorded := mappingOf(virtual)
	if !recorded {
		namespace, name = c.mountNamespace, kubeoceanv1alpha1.PhysicalName(virtual.Namespace, virtual.Name)
	}
	if namespace != c.mountNamespace || name == "" {
		return nil
	}
	return []cache.ObjectName{{Namespace: namespace, Name: name}}
}
