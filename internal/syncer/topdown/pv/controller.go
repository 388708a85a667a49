package pv

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Name names the controller, its queue and its metrics.
const Name = "topdown-pv"

// Options are the dependencies of the controller. All but GracePeriod,
// Metrics and Clock are required.
type Options struct {
	// ClusterID is the binding's.
	ClusterID string
	// Syncer makes and removes the copies.
	Syncer *dependents.Syncer
	// VirtualPVs are scoped to the label kubeocean.io/synced-by-<clusterID>:
	// the PVs marked for this binding.
	VirtualPVs corev1informers.PersistentVolumeInformer
	// PhysicalPVs are scoped to the label kubeocean.io/managed-by=kubeocean:
	// the copies.
	PhysicalPVs corev1informers.PersistentVolumeInformer
	// VirtualPVCs are scoped like VirtualPVs: a PV is used while the claim
	// it is bound to is marked.
	VirtualPVCs corev1informers.PersistentVolumeClaimInformer
	// GracePeriod is how long a copy stays after its claim was released;
	// 0 means dependents.DefaultGracePeriod.
	GracePeriod time.Duration
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Clock times the grace period; default the real clock.
	Clock clock.PassiveClock
}

// Controller reconciles virtual PVs, keyed by name.
type Controller = dependents.Controller[*corev1.PersistentVolume]

// volumes answers the Lifecycle's calls for PVs.
type volumes struct {
	syncer    *dependents.Syncer
	clusterID string
	pvs       corev1listers.PersistentVolumeLister
	claims    corev1listers.PersistentVolumeClaimLister
}

// New builds the controller and registers its event handlers; it starts
// nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	v := &volumes{syncer: opts.Syncer, clusterID: opts.ClusterID, pvs: opts.VirtualPVs.Lister(), claims: opts.VirtualPVCs.Lister()}
	c, err := dependents.NewController(dependents.ControllerOptions[*corev1.PersistentVolume]{
		Name: Name,
		Lifecycle: &dependents.Lifecycle{
			Kind:         dependents.KindPV,
			Unused:       dependents.NewUnusedTracker(opts.Clock, opts.GracePeriod),
			InUse:        v.inUse,
			Ensure:       v.ensure,
			Release:      v.release,
			DeleteOrphan: v.deleteOrphan,
		},
		Get:     func(key cache.ObjectName) (*corev1.PersistentVolume, error) { return v.pvs.Get(key.Name) },
		Virtual: opts.VirtualPVs.Informer(), Physical: opts.PhysicalPVs.Informer(),
		HasSynced: []cache.InformerSynced{opts.VirtualPVCs.Informer().HasSynced},
		Seen:      opts.Syncer.CopySeen,
		Metrics:   opts.Metrics,
	})
	if err != nil {
		return nil, err
	}
	// A claim marked or released changes whether its volume is used.
	if err := c.Watch(opts.VirtualPVCs.Informer(), controller.Handler[*corev1.PersistentVolumeClaim, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    volumeKeys,
	}); err != nil {
		return nil, fmt.Errorf("%s: registering virtual PVC handler: %w", Name, err)
	}
	return c, nil
}

func volumeKeys(claim *corev1.PersistentVolumeClaim) []cache.ObjectName {
	if claim.Spec.VolumeName == "" {
		return nil
	}
	return []cache.ObjectName{{Name: claim.Spec.VolumeName}}
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" {
		errs = append(errs, errors.New("ClusterID is required"))
	}
	if o.Syncer == nil {
		errs = append(errs, errors.New("Syncer is required"))
	}
	if o.VirtualPVs == nil || o.PhysicalPVs == nil || o.VirtualPVCs == nil {
		errs = append(errs, errors.New("VirtualPVs, PhysicalPVs and VirtualPVCs informers are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}
