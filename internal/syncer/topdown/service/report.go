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
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// reportedMessages remembers the EndpointsInOtherClusters message last
// recorded per virtual Service. Workers sync different keys at once, hence
// the lock; a restarted syncer records each standing message once more,
// which the event recorder's aggregation folds into the same event.
type reportedMessages struct {
	mu   sync.Mutex
	last map[cache.ObjectName]string
}

// changed records message for key and tells whether it differs from the
// last one; "" forgets the key.
func (r *reportedMessages) changed(key cache.ObjectName, message string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if message == "" {
		delete(r.last, key)
		return false
	}
	if r.last[key] == message {
		return false
	}
	if r.last == nil {
		r.last = map[cache.ObjectName]string{}
	}
	r.last[key] = message
	return true
}

// reportElsewhere records the Warning event EndpointsInOtherClusters on
// virtual when some of its ready endpoints are left out of the mirror,
// once per change of where they are.
func (c *Controller) reportElsewhere(virtual *corev1.Service, left elsewhere) {
	key := cache.MetaObjectToName(virtual)
	if len(left) == 0 {
		c.reported.changed(key, "")
		return
	}
	message := left.message(c.bindingName)
	if c.reported.changed(key, message) && c.recorder != nil {
		c.recorder.Event(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonEndpointsInOtherClusters, message)
	}
}

// places are the binding's Places, from its spec.network and the virtual
// nodes of every binding.
func (c *Controller) places() (*Places, error) {
	binding, err := c.bindings.Get(c.bindingName)
	if err != nil {
		return nil, err
	}
	p := &Places{Binding: c.bindingName, BindingOfNode: c.bindingOfNode}
	if n := binding.Spec.Network; n != nil {
		p.Joined, p.VirtualNodes = n.JoinedWith, n.IncludeVirtualNodes
	}
	return p, nil
}

// bindingOfNode reads a node's binding from its label: virtual nodes are
// written by their syncers only (tenants do not write nodes), and a name
// alone cannot tell cluster ID "a"'s node "b-x" from "a-b"'s node "x".
func (c *Controller) bindingOfNode(name string) (string, bool) {
	n, err := c.kubeoceanNodes.Get(name)
	if err != nil {
		return "", false
	}
	binding := n.Labels[kubeoceanv1alpha1.LabelClusterBinding]
	return binding, binding != ""
}

// virtualSlicesOf are the virtual EndpointSlices that tell a Service's
// endpoints: for a Service with a selector the EndpointSlice controller's
// (of this very Service, by its UID, not of an earlier one of the name),
// for one without all the others (hand-written, or mirrored from
// Endpoints).
func (c *Controller) virtualSlicesOf(virtual *corev1.Service) ([]*discoveryv1.EndpointSlice, error) {
	selector := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: virtual.Name})
	all, err := c.virtualSlices.EndpointSlices(virtual.Namespace).List(selector)
	if err != nil {
		return nil, err
	}
	withSelector := len(virtual.Spec.Selector) > 0
	out := make([]*discoveryv1.EndpointSlice, 0, len(all))
	for _, s := range all {
		byController := s.Labels[discoveryv1.LabelManagedBy] == endpointSliceController
		if byController != withSelector || byController && !ownedBy(s, virtual) {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

func ownedBy(s *discoveryv1.EndpointSlice, virtual *corev1.Service) bool {
	for _, ref := range s.OwnerReferences {
		if ref.Kind == "Service" && ref.UID == virtual.UID {
			return true
		}
	}
	return false
}
