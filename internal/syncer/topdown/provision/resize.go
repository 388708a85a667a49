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

package provision

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// The syncer is the external resizer of the volumes it provisions, as
// kubernetes-csi/external-resizer is for a CSI driver's: the virtual
// kube-controller-manager finds no in-tree plugin for them and leaves the
// claim to an external controller. A larger request of a bound provisioned
// claim goes to its holder; the physical cluster's resizer grows the
// volume; its capacity comes back to the virtual PV and then to the
// claim's status, with the resize conditions and allocatedResources an
// external resizer would write.

// ResizeRetry is how long a request the physical cluster refused (the
// class does not allow expansion, a quota) waits before it is tried again,
// unless the user changes it.
const ResizeRetry = 5 * time.Minute

// resizeConditions are the claim conditions of a resize, which the syncer
// writes as the resizer of its volumes.
var resizeConditions = []corev1.PersistentVolumeClaimConditionType{
	corev1.PersistentVolumeClaimResizing,
	corev1.PersistentVolumeClaimFileSystemResizePending,
	corev1.PersistentVolumeClaimControllerResizeError,
	corev1.PersistentVolumeClaimNodeResizeError,
}

// refusal is the physical cluster's answer to a larger request of a
// holder: what was asked, when, and why not.
type refusal struct {
	size    resource.Quantity
	at      time.Time
	message string
}

// refusals remembers refused requests by virtual claim UID, so that a
// refused request is not sent again on every event (a restart forgets
// them: one more try).
type refusals struct {
	mu     sync.Mutex
	byUID  map[types.UID]refusal
	expiry time.Duration
}

func (r *refusals) get(uid types.UID) (refusal, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	got, ok := r.byUID[uid]
	return got, ok
}

func (r *refusals) set(uid types.UID, got refusal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byUID[uid] = got
}

func (r *refusals) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byUID, uid)
}

// storageOf is the storage quantity of list; zero when unset.
func storageOf(list corev1.ResourceList) resource.Quantity {
	return list[corev1.ResourceStorage]
}

// syncResize carries a bound provisioned claim's request to its holder and
// the physical volume's growth back to the virtual PV and the claim.
func (c *Controller) syncResize(ctx context.Context, claim *corev1.PersistentVolumeClaim) (controller.Result, error) {
	pv, err := orNil(c.virtualVolumes.Get(claim.Spec.VolumeName))
	if err != nil || pv == nil || !c.provisioned(pv) || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != claim.UID {
		return controller.Result{}, err
	}
	holder, err := orNil(c.holders.PersistentVolumeClaims(c.mountNamespace).Get(pv.Annotations[kubeoceanv1alpha1.AnnotationHolderClaim]))
	if err != nil || holder == nil || holder.DeletionTimestamp != nil {
		return controller.Result{}, err
	}
	refused, result, err := c.resizeHolder(ctx, claim, holder)
	if err != nil {
		return result, err
	}
	if err := c.growVolume(ctx, pv, holder); err != nil {
		return result, err
	}
	return result, c.updateResizeStatus(ctx, claim, holder, refused)
}

// resizeHolder sends the claim's request to the holder when a resize is
// asked for and the holder does not carry it yet; it returns the refusal
// that stands for the current request, if any.
func (c *Controller) resizeHolder(ctx context.Context, claim, holder *corev1.PersistentVolumeClaim) (*refusal, controller.Result, error) {
	want, capacity, asked := storageOf(claim.Spec.Resources.Requests), storageOf(claim.Status.Capacity), storageOf(holder.Spec.Resources.Requests)
	if want.Cmp(capacity) <= 0 || want.Cmp(asked) == 0 {
		c.refused.forget(claim.UID)
		return nil, controller.Result{}, nil
	}
	now := c.clock.Now()
	if last, ok := c.refused.get(claim.UID); ok && last.size.Cmp(want) == 0 {
		if wait := last.at.Add(ResizeRetry).Sub(now); wait > 0 {
			return &last, controller.RequeueAfter(wait), nil
		}
	}
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim), "holder", klog.KObj(holder), "size", want.String())
	updated := holder.DeepCopy()
	if updated.Spec.Resources.Requests == nil {
		updated.Spec.Resources.Requests = corev1.ResourceList{}
	}
	updated.Spec.Resources.Requests[corev1.ResourceStorage] = want
	_, err := c.physical.CoreV1().PersistentVolumeClaims(c.mountNamespace).Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case err == nil:
		c.refused.forget(claim.UID)
		logger.Info("Resizing in the physical cluster")
		c.recorder.Eventf(claim, corev1.EventTypeNormal, kubeoceanv1alpha1.ReasonResizing, "Resizing volume %s to %s: claim %s/%s of the physical cluster asks for it",
			claim.Spec.VolumeName, want.String(), c.mountNamespace, holder.Name)
		return nil, controller.Result{}, nil
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		// A quota, or a class that does not allow expansion: retrying at
		// once cannot help.
		last := refusal{size: want, at: now, message: fmt.Sprintf("the physical cluster refused to resize claim %s/%s to %s: %v",
			c.mountNamespace, holder.Name, want.String(), apierrors.ReasonForError(err))}
		if status, ok := err.(apierrors.APIStatus); ok {
			last.message = fmt.Sprintf("the physical cluster refused to resize claim %s/%s to %s: %s",
				c.mountNamespace, holder.Name, want.String(), status.Status().Message)
		}
		c.refused.set(claim.UID, last)
		logger.Info("The physical cluster refused the resize", "err", err)
		c.recorder.Event(claim, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonVolumeResizeFailed, last.message)
		return &last, controller.RequeueAfter(ResizeRetry), nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil, controller.Result{}, nil // the holder's event brings us back
	default:
		return nil, controller.Result{}, fmt.Errorf("resizing holder claim %s/%s: %w", c.mountNamespace, holder.Name, err)
	}
}

// growVolume sets the virtual PV's capacity to the physical volume's once
// it grew. The physical PV is read only while the holder asks for more
// than the virtual PV has, or has more.
func (c *Controller) growVolume(ctx context.Context, pv *corev1.PersistentVolume, holder *corev1.PersistentVolumeClaim) error {
	have, asked, held := storageOf(pv.Spec.Capacity), storageOf(holder.Spec.Resources.Requests), storageOf(holder.Status.Capacity)
	if asked.Cmp(have) <= 0 && held.Cmp(have) <= 0 {
		return nil
	}
	if holder.Spec.VolumeName == "" {
		return nil
	}
	physical, err := c.physical.CoreV1().PersistentVolumes().Get(ctx, holder.Spec.VolumeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the physical volume %s of holder %s: %w", holder.Spec.VolumeName, holder.Name, err)
	}
	grown := storageOf(physical.Spec.Capacity)
	if grown.Cmp(have) <= 0 {
		return nil // not yet
	}
	updated := pv.DeepCopy()
	if updated.Spec.Capacity == nil {
		updated.Spec.Capacity = corev1.ResourceList{}
	}
	updated.Spec.Capacity[corev1.ResourceStorage] = grown
	if _, err := c.virtual.CoreV1().PersistentVolumes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // its event brings us back
		}
		return fmt.Errorf("growing virtual volume %s: %w", pv.Name, err)
	}
	klog.FromContext(ctx).Info("The physical volume grew", "volume", pv.Name, "physicalVolume", physical.Name, "capacity", grown.String())
	return nil
}

// updateResizeStatus writes the claim's resize status when it changed.
func (c *Controller) updateResizeStatus(ctx context.Context, claim, holder *corev1.PersistentVolumeClaim, refused *refusal) error {
	status := resizedStatus(claim, holder, refused, metav1.NewTime(c.clock.Now()))
	if equality.Semantic.DeepEqual(&claim.Status, status) {
		return nil
	}
	updated := claim.DeepCopy()
	updated.Status = *status
	if _, err := c.virtual.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // its event brings us back
		}
		return fmt.Errorf("updating the resize status of claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	before, after := storageOf(claim.Status.Capacity), storageOf(status.Capacity)
	if after.Cmp(before) > 0 {
		c.recorder.Eventf(claim, corev1.EventTypeNormal, kubeoceanv1alpha1.ReasonVolumeResizeSuccessful, "Volume %s resized to %s", claim.Spec.VolumeName, after.String())
	}
	return nil
}
