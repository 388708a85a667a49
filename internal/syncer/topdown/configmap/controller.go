package configmap

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
const Name = "topdown-configmap"

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
	// VirtualConfigMaps are scoped to the label
	// kubeocean.io/synced-by-<clusterID>: the objects marked for this
	// binding.
	VirtualConfigMaps corev1informers.ConfigMapInformer
	// PhysicalConfigMaps are scoped to MountNamespace and the label
	// kubeocean.io/managed-by=kubeocean: the copies.
	PhysicalConfigMaps corev1informers.ConfigMapInformer
	// VirtualPods are all virtual pods the binding may run; the references
	// index is added to the informer unless it has it.
	VirtualPods corev1informers.PodInformer
	// VirtualNodes are the binding's virtual nodes, which tell its pods.
	VirtualNodes corev1informers.NodeInformer
	// PhysicalPods are the binding's physical pods; a virtual pod whose
	// virtual node is gone still counts while one of them was made for
	// it. Optional: without them such pods never count.
	PhysicalPods corev1informers.PodInformer
	// GracePeriod is how long a copy stays after the last pod using it
	// went; 0 means dependents.DefaultGracePeriod.
	GracePeriod time.Duration
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Clock times the grace period; default the real clock.
	Clock clock.PassiveClock
}

// Controller reconciles virtual ConfigMaps, keyed by namespace/name.
type Controller = dependents.Controller[*corev1.ConfigMap]

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
	s := opts.Syncer
	lister := opts.VirtualConfigMaps.Lister()
	base, err := dependents.NewController(dependents.ControllerOptions[*corev1.ConfigMap]{
		Name: Name,
		Lifecycle: &dependents.Lifecycle{
			Kind:   dependents.KindConfigMap,
			Unused: dependents.NewUnusedTracker(opts.Clock, opts.GracePeriod),
			InUse: func(key cache.ObjectName) (bool, error) {
				return pods.InUse(references.KindConfigMap, key.Namespace, key.Name)
			},
			Ensure:       dependents.EnsureByKey(s.EnsureConfigMap),
			Release:      dependents.ByKey(s.ReleaseConfigMap),
			DeleteOrphan: dependents.ByKey(s.DeleteOrphanConfigMap),
		},
		Get: func(key cache.ObjectName) (*corev1.ConfigMap, error) {
			return lister.ConfigMaps(key.Namespace).Get(key.Name)
		},
		Virtual: opts.VirtualConfigMaps.Informer(), Physical: opts.PhysicalConfigMaps.Informer(), Namespaced: true,
		HasSynced: pods.HasSynced(),
		Seen:      s.CopySeen,
		Metrics:   opts.Metrics,
	})
	if err != nil {
		return nil, err
	}
	c := base
	if err := c.Watch(opts.VirtualPods.Informer(), dependents.PodHandler(references.KindConfigMap, c.Enqueue)); err != nil {
		return nil, fmt.Errorf("%s: registering virtual pod handler: %w", Name, err)
	}
	if opts.PhysicalPods != nil {
		if err := c.Watch(opts.PhysicalPods.Informer(), pods.PhysicalPodGoneHandler(references.KindConfigMap, c.Enqueue)); err != nil {
			return nil, fmt.Errorf("%s: registering physical pod handler: %w", Name, err)
		}
	}
	return c, nil
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.MountNamespace == "" {
		errs = append(errs, errors.New("ClusterID and MountNamespace are required"))
	}
	if o.Syncer == nil {
		errs = append(errs, errors.New("Syncer is required"))
	}
	if o.VirtualConfigMaps == nil || o.PhysicalConfigMaps == nil || o.VirtualPods == nil || o.VirtualNodes == nil {
		errs = append(errs, errors.New("VirtualConfigMaps, PhysicalConfigMaps, VirtualPods and VirtualNodes informers are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}
