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

package service

import (
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	corev1informers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Name names the mirror controller, its queue and its metrics.
const Name = "topdown-service"

// Options are the dependencies of the mirror and DNS controllers. All but
// Recorder and Metrics are required.
type Options struct {
	// BindingName, ClusterID, BindingUID and MountNamespace are the
	// binding's.
	BindingName, ClusterID, MountNamespace string
	BindingUID                             types.UID
	// PhysicalClient writes the mirrors, their EndpointSlices and the DNS
	// server's objects, all in MountNamespace.
	PhysicalClient kubernetes.Interface
	// BindingStatus writes the binding's DNSReady condition.
	BindingStatus kubeoceanclient.ClusterBindingsGetter
	// Bindings: the binding itself (a field selector on its name will do),
	// whose spec.serviceNamespaces are in reach and whose deletion ends
	// the mirrors.
	Bindings kubeoceaninformers.ClusterBindingInformer
	// VirtualServices and VirtualEndpointSlices: every one of the
	// virtual cluster. The slices of a Service without a selector are
	// mirrored; the EndpointSlice controller's, of a Service with one, say
	// where its ready endpoints run (see JoinedSlices).
	VirtualServices       corev1informers.ServiceInformer
	VirtualEndpointSlices discoveryinformers.EndpointSliceInformer
	// VirtualPods and VirtualNodes tell the namespaces that have pods on
	// the binding (the syncer's pod and node informers).
	VirtualPods  corev1informers.PodInformer
	VirtualNodes corev1informers.NodeInformer
	// KubeoceanNodes are the virtual nodes of every binding (scope
	// KubeoceanNodeSelector), at least with their LabelClusterBinding:
	// they tell on which binding, if any, an endpoint's pod runs.
	KubeoceanNodes corev1informers.NodeInformer
	// PhysicalServices, PhysicalEndpointSlices and PhysicalDeployments:
	// MountNamespace, scoped to the binding's identity (and, for the
	// slices, PhysicalEndpointSliceSelector). The VirtualNamespaceIndex is
	// added to PhysicalServices.
	PhysicalServices       corev1informers.ServiceInformer
	PhysicalEndpointSlices discoveryinformers.EndpointSliceInformer
	PhysicalDeployments    appsinformers.DeploymentInformer
	// DNS configures the DNS server.
	DNS DNSOptions
	// Recorder records events on virtual Services; nil records none.
	Recorder record.EventRecorder
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
}

// endpointSliceController is the managed-by value of the EndpointSlice
// controller's slices, of Services with a selector.
const endpointSliceController = "endpointslice-controller.k8s.io"

// KubeoceanNodeSelector selects the virtual nodes of every binding.
const KubeoceanNodeSelector = kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean

// PhysicalEndpointSliceSelector selects, beside the binding's identity,
// the EndpointSlices the syncer writes (the physical EndpointSlice
// controller copies a mirror's labels onto its own).
const PhysicalEndpointSliceSelector = discoveryv1.LabelManagedBy + "=" + kubeoceanv1alpha1.EndpointSliceManagedBySyncer

// Controller keeps the mirrors of virtual Services, keyed by the virtual
// Service's namespace/name.
type Controller struct {
	*controller.Controller[cache.ObjectName]

	owner          ownership.Owner
	bindingName    string
	mountNamespace string
	client         kubernetes.Interface
	recorder       record.EventRecorder
	// reported remembers, per virtual Service, the last
	// EndpointsInOtherClusters message recorded, so that an unchanged set
	// is not recorded again on every sync.
	reported reportedMessages

	bindings        kubeoceanlisters.ClusterBindingLister
	virtualServices corev1listers.ServiceLister
	virtualSlices   discoverylisters.EndpointSliceLister
	virtualPods     corev1listers.PodLister
	virtualNodes    corev1listers.NodeLister
	kubeoceanNodes  corev1listers.NodeLister
	mirrors         corev1listers.ServiceLister
	mirrorSlices    discoverylisters.EndpointSliceLister
}

// New builds the mirror controller and registers its event handlers; it
// starts nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := addVirtualNamespaceIndex(opts.PhysicalServices.Informer()); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	c := &Controller{
		owner:          ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		bindingName:    opts.BindingName,
		mountNamespace: opts.MountNamespace,
		client:         opts.PhysicalClient,
		recorder:       opts.Recorder,

		bindings:        opts.Bindings.Lister(),
		virtualServices: opts.VirtualServices.Lister(),
		virtualSlices:   opts.VirtualEndpointSlices.Lister(),
		virtualPods:     opts.VirtualPods.Lister(),
		virtualNodes:    opts.VirtualNodes.Lister(),
		kubeoceanNodes:  opts.KubeoceanNodes.Lister(),
		mirrors:         opts.PhysicalServices.Lister(),
		mirrorSlices:    opts.PhysicalEndpointSlices.Lister(),
	}
	c.Controller = controller.New(controller.Options[cache.ObjectName]{
		Name: Name, Reconcile: c.sync, Metrics: opts.Metrics,
		HasSynced: []cache.InformerSynced{opts.VirtualNodes.Informer().HasSynced, opts.KubeoceanNodes.Informer().HasSynced},
	})
	return c, c.watch(opts)
}

func (c *Controller) watch(opts Options) error {
	return errors.Join(
		c.Watch(opts.VirtualServices.Informer(), controller.Handler[*corev1.Service, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: controller.ObjectKeys[*corev1.Service]}),
		c.Watch(opts.VirtualEndpointSlices.Informer(), controller.Handler[*discoveryv1.EndpointSlice, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: sliceServiceKeys}),
		// A pod coming to or leaving the binding brings its namespace in
		// or out of reach; its updates never do (a cached pod stays bound
		// to its node).
		c.Watch(opts.VirtualPods.Informer(), controller.Handler[*corev1.Pod, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: func(p *corev1.Pod) []cache.ObjectName { return c.servicesOf(p.Namespace) },
			Changed: func(_, _ *corev1.Pod) bool { return false }}),
		c.Watch(opts.Bindings.Informer(), controller.Handler[*kubeoceanv1alpha1.ClusterBinding, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: func(*kubeoceanv1alpha1.ClusterBinding) []cache.ObjectName { return c.servicesOf(metav1.NamespaceAll) },
			Changed: reachChanged}),
		c.Watch(opts.PhysicalServices.Informer(), controller.Handler[*corev1.Service, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: mirroredKeys[*corev1.Service]}),
		c.Watch(opts.PhysicalEndpointSlices.Informer(), controller.Handler[*discoveryv1.EndpointSlice, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: mirroredKeys[*discoveryv1.EndpointSlice]}),
	)
}

// servicesOf are the keys of the virtual Services of a namespace ("" for
// all).
func (c *Controller) servicesOf(namespace string) []cache.ObjectName {
	services, err := c.virtualServices.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	keys := make([]cache.ObjectName, len(services))
	for i, s := range services {
		keys[i] = cache.MetaObjectToName(s)
	}
	return keys
}

func reachChanged(old, updated *kubeoceanv1alpha1.ClusterBinding) bool {
	return !slices.Equal(old.Spec.ServiceNamespaces, updated.Spec.ServiceNamespaces) ||
		!equality.Semantic.DeepEqual(old.Spec.Network, updated.Spec.Network) ||
		(old.DeletionTimestamp == nil) != (updated.DeletionTimestamp == nil)
}

func sliceServiceKeys(s *discoveryv1.EndpointSlice) []cache.ObjectName {
	name := s.Labels[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []cache.ObjectName{{Namespace: s.Namespace, Name: name}}
}

// mirroredKeys map a mirror or one of its slices to its virtual Service.
func mirroredKeys[T metav1.Object](obj T) []cache.ObjectName {
	a := obj.GetAnnotations()
	namespace, name := a[kubeoceanv1alpha1.AnnotationVirtualNamespace], a[kubeoceanv1alpha1.AnnotationVirtualName]
	if namespace == "" || name == "" {
		return nil
	}
	return []cache.ObjectName{{Namespace: namespace, Name: name}}
}

func (o Options) validate() error {
	var errs []error
	if o.BindingName == "" || o.ClusterID == "" || o.BindingUID == "" || o.MountNamespace == "" {
		errs = append(errs, errors.New("BindingName, ClusterID, BindingUID and MountNamespace are required"))
	}
	if o.PhysicalClient == nil || o.BindingStatus == nil {
		errs = append(errs, errors.New("PhysicalClient and BindingStatus are required"))
	}
	if o.Bindings == nil || o.VirtualServices == nil || o.VirtualEndpointSlices == nil || o.VirtualPods == nil ||
		o.VirtualNodes == nil || o.KubeoceanNodes == nil || o.PhysicalServices == nil || o.PhysicalEndpointSlices == nil || o.PhysicalDeployments == nil {
		errs = append(errs, errors.New("every informer is required"))
	}
	if o.DNS.Image == "" || o.DNS.ClusterDomain == "" {
		errs = append(errs, errors.New("DNS.Image and DNS.ClusterDomain are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	return nil
}

// NewNetwork is the pod controller's view of the binding's DNS server and
// mirrors, read from opts.PhysicalServices (with the index New adds).
func NewNetwork(opts Options) (*Network, error) {
	if err := addVirtualNamespaceIndex(opts.PhysicalServices.Informer()); err != nil {
		return nil, err
	}
	return &Network{
		owner:          ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		mountNamespace: opts.MountNamespace,
		domain:         opts.DNS.ClusterDomain,
		services:       opts.PhysicalServices.Informer().GetIndexer(),
	}, nil
}
