// Package secret is the top-down syncer's Secret controller (spec §4). For
// every virtual Secret marked for this binding it keeps the physical
// copies in step with the virtual object — the copy pods use, in the mount
// namespace, and the copy a PV's CSI driver uses on node publish, under
// the Secret's own name and namespace — deletes them and then drops the
// finalizer when the virtual Secret is deleted, and releases them once no
// pod and no copied PV of the binding uses the Secret any more. Copies are
// first made by the pod controller through package dependents.
package secret

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/pkg/controller"
	"github.com/kubeocean/kubeocean/pkg/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/syncer/topdown/references"
)

// Name names the controller, its queue and its metrics.
const Name = "topdown-secret"

// Options are the dependencies of the controller. All but GracePeriod,
// Metrics and Clock are required.
type Options struct {
	// ClusterID and MountNamespace are the binding's.
	ClusterID, MountNamespace string
	// Syncer makes and removes the copies.
	Syncer *dependents.Syncer
	// VirtualSecrets are scoped to the label
	// kubeocean.io/synced-by-<clusterID>: the objects marked for this
	// binding.
	VirtualSecrets corev1informers.SecretInformer
	// PhysicalSecrets are scoped to MountNamespace and the label
	// kubeocean.io/managed-by=kubeocean: the pod copies. CSI copies outside
	// the mount namespace are not watched; they are read live.
	PhysicalSecrets corev1informers.SecretInformer
	// VirtualPods are all virtual pods the binding may run; the references
	// index is added to the informer unless it has it.
	VirtualPods corev1informers.PodInformer
	// VirtualNodes are the binding's virtual nodes, which tell its pods.
	VirtualNodes corev1informers.NodeInformer
	// VirtualPVs are scoped like VirtualSecrets: the PVs copied for this
	// binding, whose CSI Secrets must stay. The CSI Secret index is added
	// unless the informer has it.
	VirtualPVs corev1informers.PersistentVolumeInformer
	// GracePeriod is how long a copy stays after the last user went; 0
	// means dependents.DefaultGracePeriod.
	GracePeriod time.Duration
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Clock times the grace period; default the real clock.
	Clock clock.PassiveClock
}

// Controller reconciles virtual Secrets, keyed by namespace/name.
type Controller struct {
	*controller.Controller[cache.ObjectName]

	syncer    *dependents.Syncer
	secrets   corev1listers.SecretLister
	pods      *dependents.PodReferences
	pvs       cache.Indexer
	lifecycle *dependents.Lifecycle
}

// New builds the controller and registers its event handlers; it starts
// nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	pods, err := dependents.NewPodReferences(opts.ClusterID, opts.MountNamespace, opts.VirtualPods, opts.VirtualNodes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := dependents.AddIndex(opts.VirtualPVs.Informer(), dependents.CSISecretIndexName, dependents.CSISecretIndexKeys); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.GracePeriod == 0 {
		opts.GracePeriod = dependents.DefaultGracePeriod
	}
	c := &Controller{
		syncer:  opts.Syncer,
		secrets: opts.VirtualSecrets.Lister(),
		pods:    pods,
		pvs:     opts.VirtualPVs.Informer().GetIndexer(),
	}
	c.lifecycle = &dependents.Lifecycle{
		Kind:         dependents.KindSecret,
		Unused:       dependents.NewUnusedTracker(opts.Clock, opts.GracePeriod),
		InUse:        c.inUse,
		Ensure:       c.ensure,
		Release:      dependents.ByKey(opts.Syncer.ReleaseSecret),
		DeleteOrphan: dependents.ByKey(opts.Syncer.DeleteOrphanSecret),
	}
	c.Controller = controller.New(controller.Options[cache.ObjectName]{
		Name:      Name,
		Reconcile: c.reconcile,
		// Copies are released and orphans deleted from what the caches
		// say: never before they have synced.
		HasSynced: append(pods.HasSynced(), opts.VirtualSecrets.Informer().HasSynced,
			opts.PhysicalSecrets.Informer().HasSynced, opts.VirtualPVs.Informer().HasSynced),
		Metrics: opts.Metrics,
	})
	if err := c.addHandlers(opts); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}

func (c *Controller) addHandlers(opts Options) error {
	if err := c.Watch(opts.VirtualSecrets.Informer(), controller.Handler[*corev1.Secret, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    controller.ObjectKeys[*corev1.Secret],
	}); err != nil {
		return fmt.Errorf("registering virtual Secret handler: %w", err)
	}
	// A copy deleted or edited by someone maps back to its virtual object,
	// which puts it right.
	if err := c.Watch(opts.PhysicalSecrets.Informer(), controller.Handler[*corev1.Secret, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    virtualKeys,
	}); err != nil {
		return fmt.Errorf("registering physical Secret handler: %w", err)
	}
	if err := c.Watch(opts.VirtualPods.Informer(), dependents.PodHandler(references.KindSecret, c.Enqueue)); err != nil {
		return fmt.Errorf("registering virtual pod handler: %w", err)
	}
	// A PV marked or released changes whether its CSI Secret is used.
	if err := c.Watch(opts.VirtualPVs.Informer(), controller.Handler[*corev1.PersistentVolume, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    csiSecretKeys,
	}); err != nil {
		return fmt.Errorf("registering virtual PV handler: %w", err)
	}
	return nil
}

func virtualKeys(physical *corev1.Secret) []cache.ObjectName {
	if key, ok := dependents.VirtualKeyOf(physical, true); ok {
		return []cache.ObjectName{key}
	}
	return nil
}

func csiSecretKeys(pv *corev1.PersistentVolume) []cache.ObjectName {
	if key, ok := dependents.CSISecretOf(pv); ok {
		return []cache.ObjectName{key}
	}
	return nil
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.MountNamespace == "" {
		errs = append(errs, errors.New("ClusterID and MountNamespace are required"))
	}
	if o.Syncer == nil {
		errs = append(errs, errors.New("Syncer is required"))
	}
	if o.VirtualSecrets == nil || o.PhysicalSecrets == nil || o.VirtualPods == nil || o.VirtualNodes == nil || o.VirtualPVs == nil {
		errs = append(errs, errors.New("VirtualSecrets, PhysicalSecrets, VirtualPods, VirtualNodes and VirtualPVs informers are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}
