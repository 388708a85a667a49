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

// Package portholder keeps the host ports that pods Kubeocean does not run
// bind on a lent physical node taken on its virtual node, for the virtual
// scheduler. The scheduler's NodePorts filter reads only the pods bound to
// a node, so for every virtual node whose physical node has such ports the
// controller keeps one placeholder pod in the virtual cluster: bound to the
// virtual node, in a namespace of Kubeocean's, carrying those host ports,
// requesting nothing, tolerating everything, owned by the virtual node (so
// it goes with it) and labelled with the binding's identity (so unbinding
// finds it). It is never run: the top-down side skips pods labelled
// hostports.LabelPlaceholder.
//
// Container ports cannot be changed on a pod, so a change of the ports
// makes a new placeholder, named after them, before the old one is
// deleted: the ports never look free in between.
package portholder

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller, its queue and its metrics.
const ControllerName = "bottomup-host-ports"

// byNodeName indexes the placeholders by the virtual node they hold.
const byNodeName = "spec.nodeName"

// Options are the dependencies of the controller; all but Metrics are
// required.
type Options struct {
	ClusterID  string
	BindingUID types.UID
	// Namespace is the virtual namespace the placeholders live in, one of
	// Kubeocean's (kubeocean-system).
	Namespace string
	// VirtualClient creates and deletes the placeholders.
	VirtualClient corev1client.PodsGetter
	// VirtualNodes are the binding's virtual nodes.
	VirtualNodes corev1informers.NodeInformer
	// Placeholders are the virtual pods in Namespace labelled with the
	// binding's identity and hostports.LabelPlaceholder (Selector).
	Placeholders corev1informers.PodInformer
	// Tracker holds the host ports of the physical pods Kubeocean does not
	// run, by physical node; it must be fed (Tracker.Feed).
	Tracker *hostports.Tracker
	// Metrics receives the controller's metrics; nil records none.
	Metrics *controller.Metrics
}

// Selector selects the placeholders of the binding owner.
func Selector(owner ownership.Owner) string {
	return owner.Selector() + "," + hostports.LabelPlaceholder + "=true"
}

// Controller keeps the placeholders, keyed by virtual node name.
type Controller struct {
	*controller.Controller[string]

	clusterID    string
	owner        ownership.Owner
	namespace    string
	client       corev1client.PodsGetter
	virtualNodes corev1listers.NodeLister
	placeholders cache.Indexer
	tracker      *hostports.Tracker
}

// New builds the controller and registers its handlers; it starts nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		clusterID:    opts.ClusterID,
		owner:        ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		namespace:    opts.Namespace,
		client:       opts.VirtualClient,
		virtualNodes: opts.VirtualNodes.Lister(),
		placeholders: opts.Placeholders.Informer().GetIndexer(),
		tracker:      opts.Tracker,
	}
	if err := opts.Placeholders.Informer().AddIndexers(cache.Indexers{byNodeName: nodeNameOf}); err != nil {
		return nil, fmt.Errorf("%s: adding %s index: %w", ControllerName, byNodeName, err)
	}
	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.reconcile,
		HasSynced: []cache.InformerSynced{
			opts.VirtualNodes.Informer().HasSynced, opts.Placeholders.Informer().HasSynced, opts.Tracker.HasSynced,
		},
		Metrics: opts.Metrics,
	})
	opts.Tracker.OnChange(func(physicalNode string, _ bool) {
		c.Enqueue(kubeoceanv1alpha1.VirtualNodeName(c.clusterID, physicalNode))
	})
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{opts.VirtualNodes.Informer(), controller.Handler[*corev1.Node, string]{
			Enqueue: c.Enqueue,
			Keys:    func(node *corev1.Node) []string { return []string{node.Name} },
			Filter:  c.ownsNode,
			Changed: func(oldNode, newNode *corev1.Node) bool {
				return kubeoceanv1alpha1.PhysicalNodeNameOf(oldNode) != kubeoceanv1alpha1.PhysicalNodeNameOf(newNode) ||
					deleting(oldNode) != deleting(newNode) || oldNode.UID != newNode.UID
			},
		}},
		{opts.Placeholders.Informer(), controller.Handler[*corev1.Pod, string]{
			Enqueue: c.Enqueue,
			Keys: func(pod *corev1.Pod) []string {
				if pod.Spec.NodeName == "" {
					return nil
				}
				return []string{pod.Spec.NodeName}
			},
			Filter: c.isPlaceholder,
		}},
	}
	for _, h := range handlers {
		if err := c.Watch(h.informer, h.handler); err != nil {
			return nil, fmt.Errorf("%s: %w", ControllerName, err)
		}
	}
	return c, nil
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.BindingUID == "" || o.Namespace == "" {
		errs = append(errs, errors.New("ClusterID, BindingUID and Namespace are required"))
	}
	if o.VirtualClient == nil || o.VirtualNodes == nil || o.Placeholders == nil || o.Tracker == nil {
		errs = append(errs, errors.New("VirtualClient, VirtualNodes, Placeholders and Tracker are required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s options: %w", ControllerName, err)
	}
	return nil
}

func nodeNameOf(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}

// ownsNode tells the binding's virtual nodes.
func (c *Controller) ownsNode(node *corev1.Node) bool {
	return node.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
		node.Labels[kubeoceanv1alpha1.LabelClusterID] == c.clusterID
}

// isPlaceholder tells the binding's placeholders.
func (c *Controller) isPlaceholder(pod *corev1.Pod) bool {
	return pod.Namespace == c.namespace && hostports.IsPlaceholder(pod) && c.owner.Owns(pod)
}

// deleting tells a virtual node being drained: its placeholder goes first,
// so that the drain does not wait for it.
func deleting(node *corev1.Node) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == kubeoceanv1alpha1.TaintVirtualNodeDeleting {
			return true
		}
	}
	return node.DeletionTimestamp != nil
}
