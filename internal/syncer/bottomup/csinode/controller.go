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

package csinode

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	corev1informers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	storagev1client "k8s.io/client-go/kubernetes/typed/storage/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller, its queue and its metrics.
const ControllerName = "bottomup-csinode"

// Options are the dependencies of the CSINode controller.
type Options struct {
	// ClusterID is the binding's cluster ID; the virtual CSINodes carry it
	// as the kubeocean.io/cluster-id label.
	ClusterID string
	// VirtualClient writes CSINodes in the virtual cluster.
	VirtualClient storagev1client.CSINodesGetter
	// PhysicalCSINodes is an informer on the physical cluster's CSINodes.
	PhysicalCSINodes storageinformers.CSINodeInformer
	// VirtualCSINodes is an informer on the virtual CSINodes of this
	// binding, scoped by the wiring to kubeocean.io/managed-by=kubeocean and
	// kubeocean.io/cluster-id=<ClusterID>.
	VirtualCSINodes storageinformers.CSINodeInformer
	// VirtualNodes is an informer on the binding's virtual nodes, scoped
	// the same way.
	VirtualNodes corev1informers.NodeInformer
	// Recorder emits events on the virtual nodes.
	Recorder record.EventRecorder
	// Metrics receives the controller's metrics; nil records none.
	Metrics *controller.Metrics
}

// Controller mirrors CSINodes, keyed by physical node name.
type Controller struct {
	*controller.Controller[string]

	clusterID        string
	client           storagev1client.CSINodesGetter
	physicalCSINodes storagelisters.CSINodeLister
	virtualCSINodes  storagelisters.CSINodeLister
	virtualNodes     corev1listers.NodeLister
	recorder         record.EventRecorder
}

// New builds the controller and registers its event handlers; it starts
// nothing. Run it with Run(ctx, workers) after the informers are started.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		clusterID:        opts.ClusterID,
		client:           opts.VirtualClient,
		physicalCSINodes: opts.PhysicalCSINodes.Lister(),
		virtualCSINodes:  opts.VirtualCSINodes.Lister(),
		virtualNodes:     opts.VirtualNodes.Lister(),
		recorder:         opts.Recorder,
	}

	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.reconcile,
		Metrics:   opts.Metrics,
	})
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{opts.PhysicalCSINodes.Informer(), c.physicalCSINodeHandler()},
		{opts.VirtualCSINodes.Informer(), c.virtualCSINodeHandler()},
		{opts.VirtualNodes.Informer(), c.virtualNodeHandler()},
	}
	for _, h := range handlers {
		if err := c.Watch(h.informer, h.handler); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (opts *Options) validate() error {
	var errs []error
	if opts.ClusterID == "" {
		errs = append(errs, errors.New("ClusterID is required"))
	}
	if opts.VirtualClient == nil {
		errs = append(errs, errors.New("VirtualClient is required"))
	}
	if opts.PhysicalCSINodes == nil || opts.VirtualCSINodes == nil || opts.VirtualNodes == nil {
		errs = append(errs, errors.New("PhysicalCSINodes, VirtualCSINodes and VirtualNodes are required"))
	}
	if opts.Recorder == nil {
		errs = append(errs, errors.New("Recorder is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("csinode controller options: %w", err)
	}
	return nil
}

// physicalCSINodeHandler reconciles a physical node whose drivers change.
// The CSINodes of nodes without a virtual twin are none of our business.
func (c *Controller) physicalCSINodeHandler() controller.Handler[*storagev1.CSINode, string] {
	return controller.Handler[*storagev1.CSINode, string]{
		Enqueue: c.Enqueue,
		Keys:    func(csiNode *storagev1.CSINode) []string { return []string{csiNode.Name} },
		Filter: func(csiNode *storagev1.CSINode) bool {
			_, err := c.virtualNodes.Get(kubeoceanv1alpha1.VirtualNodeName(c.clusterID, csiNode.Name))
			return err == nil
		},
		Changed: func(oldCSINode, newCSINode *storagev1.CSINode) bool {
			return !equality.Semantic.DeepEqual(oldCSINode.Spec, newCSINode.Spec)
		},
	}
}

// virtualCSINodeHandler puts back what someone changed or deleted, and on
// start-up finds the mirrors of physical CSINodes deleted meanwhile.
func (c *Controller) virtualCSINodeHandler() controller.Handler[*storagev1.CSINode, string] {
	return controller.Handler[*storagev1.CSINode, string]{
		Enqueue: c.Enqueue,
		Keys:    physicalNodeKeys[*storagev1.CSINode],
		Filter:  func(csiNode *storagev1.CSINode) bool { return c.owns(csiNode) },
	}
}

// virtualNodeHandler mirrors when a virtual node appears and removes the
// mirror when it goes. Status updates, the bulk of node events, are dropped.
func (c *Controller) virtualNodeHandler() controller.Handler[*corev1.Node, string] {
	return controller.Handler[*corev1.Node, string]{
		Enqueue: c.Enqueue,
		Keys:    physicalNodeKeys[*corev1.Node],
		Filter:  func(node *corev1.Node) bool { return c.owns(node) },
		Changed: func(oldNode, newNode *corev1.Node) bool {
			return kubeoceanv1alpha1.PhysicalNodeNameOf(oldNode) != kubeoceanv1alpha1.PhysicalNodeNameOf(newNode) ||
				c.owns(oldNode) != c.owns(newNode)
		},
	}
}

// physicalNodeKeys maps a virtual object to the physical node it stands for.
func physicalNodeKeys[T interface {
	GetLabels() map[string]string
	GetAnnotations() map[string]string
}](obj T) []string {
	if name := kubeoceanv1alpha1.PhysicalNodeNameOf(obj); name != "" {
		return []string{name}
	}
	return nil
}

// owns tells the virtual objects of this binding from any other.
func (c *Controller) owns(obj interface{ GetLabels() map[string]string }) bool {
	labels := obj.GetLabels()
	return labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
		labels[kubeoceanv1alpha1.LabelClusterID] == c.clusterID
}
