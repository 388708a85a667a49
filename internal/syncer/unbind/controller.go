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

package unbind

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "syncer-unbind"

// Options are the dependencies of the controller.
type Options struct {
	BindingName, ClusterID, MountNamespace string
	// BindingUID, with ClusterID, is the identity of the binding's physical
	// objects (package ownership): unbinding waits for and sweeps only
	// those, never another binding's sharing the physical cluster or even
	// the mount namespace.
	BindingUID types.UID

	// Virtual and physical clients; the sweep lists and deletes across
	// kinds, so it takes the whole clientsets.
	VirtualKube, PhysicalKube           kubernetes.Interface
	VirtualKubeocean, PhysicalKubeocean kubeoceanclient.Interface

	Bindings     kubeoceaninformers.ClusterBindingInformer // virtual, this binding only
	VirtualNodes corev1informers.NodeInformer              // this binding's virtual nodes
	Policies     kubeoceaninformers.ResourceLeasingPolicyInformer
	ManagedPods  corev1informers.PodInformer // physical, mount namespace, the binding's

	Recorder record.EventRecorder // virtual cluster
	Metrics  *controller.Metrics
}

// Controller reconciles the binding's name.
type Controller struct {
	*controller.Controller[string]

	opts         Options
	owner        ownership.Owner
	bindings     kubeoceanlisters.ClusterBindingLister
	virtualNodes corev1listers.NodeLister
	policies     kubeoceanlisters.ResourceLeasingPolicyLister
	managedPods  corev1listers.PodLister
}

// New builds the controller and registers its event handlers.
func New(opts Options) (*Controller, error) {
	c := &Controller{
		opts:         opts,
		owner:        ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		bindings:     opts.Bindings.Lister(),
		virtualNodes: opts.VirtualNodes.Lister(),
		policies:     opts.Policies.Lister(),
		managedPods:  opts.ManagedPods.Lister(),
	}
	c.Controller = controller.New(controller.Options[string]{
		Name:      ControllerName,
		Reconcile: c.sync,
		Metrics:   opts.Metrics,
		HasSynced: []cache.InformerSynced{
			opts.Bindings.Informer().HasSynced, opts.VirtualNodes.Informer().HasSynced,
			opts.Policies.Informer().HasSynced, opts.ManagedPods.Informer().HasSynced,
		},
	})
	// Every event that can move unbinding forward wakes the one key.
	wake := controller.Handler[metav1.Object, string]{
		Enqueue: c.Enqueue,
		Keys:    func(metav1.Object) []string { return []string{opts.BindingName} },
	}
	for _, informer := range []cache.SharedIndexInformer{
		opts.Bindings.Informer(), opts.VirtualNodes.Informer(), opts.ManagedPods.Informer(),
	} {
		if err := c.Watch(informer, wake); err != nil {
			return nil, err
		}
	}
	return c, nil
}
