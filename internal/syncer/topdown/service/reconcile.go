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
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// recreateRetry is how soon a mirror deleted for a change the API cannot
// make in place is made again, when its deletion has not finished.
const recreateRetry = time.Second

func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	virtual, err := c.virtualServices.Services(key.Namespace).Get(key.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	if apierrors.IsNotFound(err) {
		virtual = nil
	}
	current, err := c.mirrorOf(key)
	if err != nil {
		return controller.Result{}, err
	}
	mirrored, err := c.mirrored(virtual)
	if err != nil || !mirrored {
		c.reported.changed(key, "")
		return controller.Result{}, errorsJoin(err, c.removeMirror(ctx, current))
	}
	desired := Mirror(virtual, c.owner, c.mountNamespace)
	mirror, result, err := c.ensureMirror(ctx, virtual, current, desired)
	if err != nil || mirror == nil {
		return result, err
	}
	var slices []*discoveryv1.EndpointSlice
	if mirror.Spec.Type != corev1.ServiceTypeExternalName {
		var left elsewhere
		if slices, left, err = c.desiredSlices(virtual, mirror); err != nil {
			return controller.Result{}, err
		}
		c.reportElsewhere(virtual, left)
	}
	return controller.Result{}, c.syncSlices(ctx, mirror, slices)
}

// mirrored tells whether virtual is a Service the binding's pods may
// reach: the binding is live, the Service is not default/kubernetes (the
// pods reach the virtual apiserver at its own address), and its namespace
// has pods on the binding or is one of spec.serviceNamespaces.
func (c *Controller) mirrored(virtual *corev1.Service) (bool, error) {
	if virtual == nil || virtual.DeletionTimestamp != nil ||
		virtual.Namespace == metav1.NamespaceDefault && virtual.Name == "kubernetes" {
		return false, nil
	}
	binding, err := c.bindings.Get(c.bindingName)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if binding.DeletionTimestamp != nil {
		return false, nil
	}
	if slices.Contains(binding.Spec.ServiceNamespaces, virtual.Namespace) {
		return true, nil
	}
	pods, err := c.virtualPods.Pods(virtual.Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		if c.onBinding(p) {
			return true, nil
		}
	}
	return false, nil
}

// onBinding tells a virtual pod bound to one of the binding's virtual
// nodes.
func (c *Controller) onBinding(p *corev1.Pod) bool {
	if p.Spec.NodeName == "" {
		return false
	}
	_, err := c.virtualNodes.Get(p.Spec.NodeName)
	return err == nil
}

// mirrorOf is the binding's mirror of key, proven by its identity labels
// and the virtual Service its annotations name; nil when there is none.
func (c *Controller) mirrorOf(key cache.ObjectName) (*corev1.Service, error) {
	s, err := c.mirrors.Services(c.mountNamespace).Get(kubeoceanv1alpha1.PhysicalName(key.Namespace, key.Name))
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !c.isMirrorOf(s, key) {
		return nil, nil
	}
	return s, nil
}

func (c *Controller) isMirrorOf(s *corev1.Service, key cache.ObjectName) bool {
	return c.owner.Owns(s) && s.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] == key.Namespace &&
		s.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] == key.Name
}

// ensureMirror makes current look like desired: created, updated in place,
// or deleted and made again when the API cannot change it in place (a
// headless, ClusterIP or ExternalName Service becoming another of them).
func (c *Controller) ensureMirror(ctx context.Context, virtual, current, desired *corev1.Service) (*corev1.Service, controller.Result, error) {
	logger := klog.FromContext(ctx)
	services := c.client.CoreV1().Services(c.mountNamespace)
	if current != nil && needsRecreate(current, desired) {
		if err := c.deleteMirror(ctx, current); err != nil {
			return nil, controller.Result{}, err
		}
		logger.V(2).Info("Deleted mirror Service to recreate it", "mirror", klog.KObj(current))
		current = nil
	}
	if current == nil {
		created, err := services.Create(ctx, desired, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// The cache may lag behind: the live object tells.
			live, err := services.Get(ctx, desired.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) || err == nil && c.isMirrorOf(live, cache.MetaObjectToName(virtual)) {
				// Ours, being deleted or not cached yet.
				return nil, controller.RequeueAfter(recreateRetry), nil
			}
			if err != nil {
				return nil, controller.Result{}, err
			}
			return nil, controller.Result{}, c.nameTaken(virtual, desired.Name)
		case err != nil:
			return nil, controller.Result{}, fmt.Errorf("creating mirror Service %s/%s: %w", c.mountNamespace, desired.Name, err)
		}
		logger.V(2).Info("Created mirror Service", "mirror", klog.KObj(created))
		return created, controller.Result{}, nil
	}
	updated, changed := applyMirror(current, desired)
	if !changed {
		return current, controller.Result{}, nil
	}
	updated, err := services.Update(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, controller.Result{}, fmt.Errorf("updating mirror Service %s/%s: %w", c.mountNamespace, desired.Name, err)
	}
	logger.V(2).Info("Updated mirror Service", "mirror", klog.KObj(updated))
	return updated, controller.Result{}, nil
}

// nameTaken: a Service of the mirror's name is not the binding's. It is
// left alone, and the virtual Service has no mirror until it goes.
func (c *Controller) nameTaken(virtual *corev1.Service, name string) error {
	message := fmt.Sprintf("Service %s/%s in the physical cluster is not this binding's mirror: the Service is not reachable from the binding's pods", c.mountNamespace, name)
	if c.recorder != nil {
		c.recorder.Event(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonServiceMirrorNameTaken, message)
	}
	return controller.Terminal(fmt.Errorf("%s", message))
}

// removeMirror deletes the binding's mirror (nil: none) and its slices.
func (c *Controller) removeMirror(ctx context.Context, mirror *corev1.Service) error {
	if mirror == nil {
		return nil
	}
	if err := c.syncSlices(ctx, mirror, nil); err != nil {
		return err
	}
	if err := c.deleteMirror(ctx, mirror); err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Deleted mirror Service", "mirror", klog.KObj(mirror))
	return nil
}

func (c *Controller) deleteMirror(ctx context.Context, mirror *corev1.Service) error {
	uid := mirror.UID
	err := c.client.CoreV1().Services(c.mountNamespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting mirror Service %s/%s: %w", c.mountNamespace, mirror.Name, err)
	}
	return nil
}

func errorsJoin(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
