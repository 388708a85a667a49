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

package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

// syncDeletion carries the deletion of a virtual pod to its physical pod
// and then finishes the virtual pod. No kubelet serves a virtual node, so a
// deleted virtual pod would stay Terminating forever: once the physical pod
// is gone for sure, we delete the virtual pod with grace period 0, which is
// what a kubelet does once its containers have stopped.
func (c *Controller) syncDeletion(ctx context.Context, virtual *corev1.Pod, m mapping) error {
	// Without a recorded mapping the physical pod may still exist where
	// the name rule puts it (made before the bottom-up side's first status
	// write): deletePhysical looks there and deletes it only if it was made
	// for this virtual pod.
	gone, err := c.deletePhysical(ctx, virtual, m)
	if err != nil || !gone {
		return err
	}
	if err := c.identity.Delete(ctx, m.namespace, m.name, cache.MetaObjectToName(virtual), virtual.UID); err != nil {
		return err
	}
	return c.finishVirtual(ctx, virtual)
}

// deletePhysical deletes the virtual pod's physical pod, with the grace
// period the virtual pod was deleted with, and tells whether it is gone.
// The answer comes from a live read: a cache that has not seen the
// physical pod yet must not let the virtual pod go while it runs. The pod
// is looked for where the mapping says, which is outside the cached mount
// namespace for a pod mapped elsewhere.
func (c *Controller) deletePhysical(ctx context.Context, virtual *corev1.Pod, m mapping) (bool, error) {
	logger := klog.FromContext(ctx)
	physical, err := c.physicalPods.Pods(m.namespace).Get(m.name)
	// A pod in the cache brings us back with its events; one only found
	// live (outside the cached namespace, or without the binding's
	// identity) is asked about live until it is gone.
	cached := err == nil
	if apierrors.IsNotFound(err) {
		if m.uid != "" && c.deleted.seen(m.uid, c.clock.Now()) {
			// The cache showed this very pod, then its deletion.
			return true, nil
		}
		physical, err = c.physicalClient.Pods(m.namespace).Get(ctx, m.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
	}
	if err != nil {
		return false, err
	}
	if physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(virtual.UID) {
		// Another virtual pod's (an earlier one of the same name, or one
		// of another virtual cluster): not ours to wait for. A pod that
		// names our virtual pod's UID was made for it, whatever binding
		// labels it carries (older versions set none).
		return true, nil
	}
	if physical.DeletionTimestamp == nil {
		err := c.physicalClient.Pods(physical.Namespace).Delete(ctx, physical.Name, metav1.DeleteOptions{
			GracePeriodSeconds: virtual.DeletionGracePeriodSeconds,
			Preconditions:      &metav1.Preconditions{UID: &physical.UID},
		})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case apierrors.IsConflict(err):
			return false, fmt.Errorf("physical pod %s/%s was replaced while deleting it; retrying", physical.Namespace, physical.Name)
		case err != nil:
			return false, fmt.Errorf("deleting physical pod %s/%s: %w", physical.Namespace, physical.Name, err)
		}
		logger.V(2).Info("Deleted physical pod", "physicalPod", klog.KObj(physical), "gracePeriodSeconds", virtual.DeletionGracePeriodSeconds)
	}
	if cached {
		// A pod that never ran is removed at once, one that runs
		// terminates gracefully: either way an event of it (its deletion,
		// or the mark of it) brings us back, and the cache's word that it
		// is gone is then checked live above. No read is spent now.
		logger.V(4).Info("Waiting for the physical pod to terminate", "physicalPod", klog.KObj(physical))
		return false, nil
	}
	live, err := c.physicalClient.Pods(physical.Namespace).Get(ctx, physical.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	case live.UID != physical.UID:
		return true, nil
	}
	logger.V(4).Info("Waiting for the physical pod to terminate", "physicalPod", klog.KObj(physical))
	return false, nil
}

// finishVirtual deletes the virtual pod for good. The UID precondition
// spares a pod recreated under the same name.
func (c *Controller) finishVirtual(ctx context.Context, virtual *corev1.Pod) error {
	if grace := virtual.DeletionGracePeriodSeconds; grace != nil && *grace == 0 {
		return nil // finished already; only finalizers of others hold it
	}
	err := c.virtualClient.Pods(virtual.Namespace).Delete(ctx, virtual.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &virtual.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("finishing deletion of virtual pod %s/%s: %w", virtual.Namespace, virtual.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Finished deletion of virtual pod")
	return nil
}

// syncLost fails a virtual pod whose physical pod existed (the bottom-up
// side recorded its UID) and is gone: deleted or evicted on the physical
// side, or removed with its node. A live read confirms it first, since our
// cache may not show a pod the bottom-up side has already seen.
func (c *Controller) syncLost(ctx context.Context, virtual *corev1.Pod, m mapping) error {
	live, err := c.physicalClient.Pods(m.namespace).Get(ctx, m.name, metav1.GetOptions{})
	if err == nil && !c.owner.Owns(live) && (m.namespace == c.mountNamespace || ownership.Legacy(live)) {
		// Made for this virtual pod by an older version, which set no
		// binding identity, or by an earlier binding of this name (only
		// ever in the mount namespace); the informer, scoped to this
		// binding's identity, cannot see it until it is adopted.
		adoptable, _, err := c.adoptable(ctx, virtual, live)
		if err != nil || adoptable {
			if adoptable {
				klog.FromContext(ctx).Info("Adopting the physical pod an older version or an earlier binding made for this pod", "physicalPod", klog.KObj(live))
				err = c.adopt(ctx, virtual, live)
			}
			return err
		}
	}
	switch {
	case err == nil:
		klog.FromContext(ctx).V(4).Info("Physical pod exists; cache is behind", "physicalPod", klog.KObj(live))
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("confirming physical pod %s/%s is gone: %w", m.namespace, m.name, err)
	}
	if err := c.identity.Delete(ctx, m.namespace, m.name, cache.MetaObjectToName(virtual), virtual.UID); err != nil {
		return err
	}
	message := fmt.Sprintf("Physical pod %s/%s (UID %s) in cluster %s no longer exists: it was deleted or evicted there",
		m.namespace, m.name, m.uid, c.clusterID)
	return c.markFailed(ctx, virtual, message)
}
