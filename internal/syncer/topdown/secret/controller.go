package secret

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Name names the controller, its queue and its metrics.
const Name = "topdown-secret"

// Options are the dependencies of the controller. All but GracePeriod,
// Metrics and Clock are required.
type Options struct {
	// ClusterID and MountNamespace are the binding's.
	ClusterID, MountNamespace string
	// BindingUID is the binding's; with ClusterID, the identity of its
	// physical objects.
	BindingUID types.UID
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
	// PhysicalPods are the binding's physical pods; a virtual pod whose
	// virtual node is gone still counts while one of them was made for
	// it. Optional: without them such pods never count.
	PhysicalPods corev1informers.PodInformer
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
type Controller = dependents.Controller[*corev1.Secret]

// users tells who needs copies of a Secret: pods and PVs of the binding.
type users struct {
	syncer *dependents.Syncer
	pods   *dependents.PodReferences
	pvs    cache.Indexer
}

// New builds the controller and registers its event handlers; it starts
// nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	pods, err := dependents.NewPodReferences(ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID}, opts.MountNamespace, opts.VirtualPods, opts.VirtualNodes, opts.PhysicalPods)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if err := dependents.AddIndex(opts.VirtualPVs.Informer(), dependents.CSISecretIndexName, dependents.CSISecretIndexKeys); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	u := &users{syncer: opts.Syncer, pods: pods, pvs: opts.VirtualPVs.Informer().GetIndexer()}
	lister := opts.VirtualSecrets.Lister()
	c, err := dependents.NewController(dependents.ControllerOptions[*corev1.Secret]{
		Name: Name,
		Lifecycle: &dependents.Lifecycle{
			Kind:         dependents.KindSecret,
			Unused:       dependents.NewUnusedTracker(opts.Clock, opts.GracePeriod),
			InUse:        u.inUse,
			Ensure:       u.ensure,
			Release:      dependents.ByKey(opts.Syncer.ReleaseSecret),
			DeleteOrphan: dependents.ByKey(opts.Syncer.DeleteOrphanSecret),
		},
		Get: func(key cache.ObjectName) (*corev1.Secret, error) {
			return lister.Secrets(key.Namespace).Get(key.Name)
		},
		Virtual: opts.VirtualSecrets.Informer(), Physical: opts.PhysicalSecrets.Informer(), Namespaced: true,
		HasSynced: append(pods.HasSynced(), opts.VirtualPVs.Informer().HasSynced),
		Seen:      opts.Syncer.CopySeen,
		Metrics:   opts.Metrics,
	})
	if err != nil {
		return nil, err
	}
	if err := addHandlers(c, opts, pods); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	return c, nil
}

// addHandlers registers what else tells whether a Secret is used: the
// pods referring to it, the physical twins of finished ones going, and the PVs naming it as their CSI Secret.
func addHandlers(c *Controller, opts Options, pods *dependents.PodReferences) error {
	if err := c.Watch(opts.VirtualPods.Informer(), dependents.PodHandler(references.KindSecret, c.Enqueue)); err != nil {
		return fmt.Errorf("registering virtual pod handler: %w", err)
	}
	if opts.PhysicalPods != nil {
		if err := c.Watch(opts.PhysicalPods.Informer(), pods.PhysicalPodGoneHandler(references.KindSecret, c.Enqueue)); err != nil {
			return fmt.Errorf("registering physical pod handler: %w", err)
		}
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
