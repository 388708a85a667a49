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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// desiredSlices are the EndpointSlices the syncer writes for mirror: for a
// virtual Service without a selector its slices, mirrored; for one with a
// selector those of the pods of joined networks (JoinedSlices). It also
// counts the ready endpoints the mirror leaves out.
func (c *Controller) desiredSlices(virtual, mirror *corev1.Service) ([]*discoveryv1.EndpointSlice, elsewhere, error) {
	virtualSlices, err := c.virtualSlicesOf(virtual)
	if err != nil {
		return nil, nil, err
	}
	places, err := c.places()
	if err != nil {
		return nil, nil, err
	}
	if len(virtual.Spec.Selector) == 0 {
		out, left := mirrorSlices(mirror, virtualSlices, c.owner, c.podOnBinding, places)
		return out, left, nil
	}
	out, left := JoinedSlices(mirror, virtualSlices, c.owner, c.podOnBinding, places)
	return out, left, nil
}

// podOnBinding implements PodTarget from the virtual pods the syncer
// caches: the pods bound to its virtual nodes.
func (c *Controller) podOnBinding(namespace, name string) (string, bool) {
	p, err := c.virtualPods.Pods(namespace).Get(name)
	if err != nil || !c.onBinding(p) {
		return "", false
	}
	return kubeoceanv1alpha1.PhysicalName(namespace, name), true
}

// syncSlices makes the slices the syncer wrote for mirror those of
// desired: created, updated, and the others deleted.
func (c *Controller) syncSlices(ctx context.Context, mirror *corev1.Service, desired []*discoveryv1.EndpointSlice) error {
	logger := klog.FromContext(ctx)
	client := c.client.DiscoveryV1().EndpointSlices(c.mountNamespace)
	current, err := c.mirrorSlices.EndpointSlices(c.mountNamespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: mirror.Name}))
	if err != nil {
		return err
	}
	have := make(map[string]*discoveryv1.EndpointSlice, len(current))
	for _, s := range current {
		if c.owner.Owns(s) {
			have[s.Name] = s
		}
	}
	for _, want := range desired {
		existing, ok := have[want.Name]
		delete(have, want.Name)
		if !ok {
			if _, err := client.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating EndpointSlice %s/%s: %w", c.mountNamespace, want.Name, err)
			}
			logger.V(2).Info("Created mirror EndpointSlice", "endpointSlice", klog.KObj(want))
			continue
		}
		if existing.AddressType != want.AddressType {
			// Immutable: made again under the next sync.
			have[want.Name] = existing
			continue
		}
		if updated, changed := applySlice(existing, want); changed {
			if _, err := client.Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("updating EndpointSlice %s/%s: %w", c.mountNamespace, want.Name, err)
			}
			logger.V(2).Info("Updated mirror EndpointSlice", "endpointSlice", klog.KObj(want))
		}
	}
	for _, stale := range have {
		uid := stale.UID
		err := client.Delete(ctx, stale.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting EndpointSlice %s/%s: %w", c.mountNamespace, stale.Name, err)
		}
		logger.V(2).Info("Deleted mirror EndpointSlice", "endpointSlice", klog.KObj(stale))
	}
	return nil
}
