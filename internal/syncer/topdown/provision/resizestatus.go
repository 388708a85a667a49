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
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// resizedStatus is the status a bound provisioned claim shows for its
// holder in the physical cluster, as external-resizer writes it:
//
//   - capacity grows to the holder's once the physical volume (and its
//     file system) grew; it never shrinks;
//   - while the claim asks for more than its capacity, allocatedResources
//     holds the request; allocatedResourceStatuses and the resize
//     conditions are the holder's (Resizing, FileSystemResizePending and
//     the errors), or ControllerResizeInProgress with Resizing before the
//     physical resizer wrote any, or ControllerResizeInfeasible with
//     ControllerResizeError when the physical cluster refused the request;
//   - once done, the resize conditions and the storage entry of
//     allocatedResourceStatuses go; allocatedResources stays, down to the
//     capacity if the user lowered the request.
//
// now stamps the conditions the syncer makes itself; a condition that
// stays as it was keeps its times, so that a second pass writes nothing.
func resizedStatus(claim, holder *corev1.PersistentVolumeClaim, refused *refusal, now metav1.Time) *corev1.PersistentVolumeClaimStatus {
	status := claim.Status.DeepCopy()
	capacity := storageOf(status.Capacity)
	if grown := storageOf(holder.Status.Capacity); grown.Cmp(capacity) > 0 {
		if status.Capacity == nil {
			status.Capacity = corev1.ResourceList{}
		}
		status.Capacity[corev1.ResourceStorage] = grown
		capacity = grown
	}
	want := storageOf(claim.Spec.Resources.Requests)
	resizing := want.Cmp(capacity) > 0

	previous := status.Conditions
	status.Conditions = slices.DeleteFunc(slices.Clone(previous), func(c corev1.PersistentVolumeClaimCondition) bool {
		return slices.Contains(resizeConditions, c.Type)
	})
	if len(status.Conditions) == 0 {
		status.Conditions = nil
	}
	if status.AllocatedResourceStatuses != nil {
		delete(status.AllocatedResourceStatuses, corev1.ResourceStorage)
		if len(status.AllocatedResourceStatuses) == 0 {
			status.AllocatedResourceStatuses = nil
		}
	}
	if !resizing {
		// A request lowered back to the capacity (after a refusal): nothing
		// beyond the capacity is allocated, nor counted by quotas.
		if allocated, ok := status.AllocatedResources[corev1.ResourceStorage]; ok && allocated.Cmp(capacity) > 0 {
			status.AllocatedResources[corev1.ResourceStorage] = capacity
		}
		return status
	}

	if status.AllocatedResources == nil {
		status.AllocatedResources = corev1.ResourceList{}
	}
	status.AllocatedResources[corev1.ResourceStorage] = want
	phase := corev1.PersistentVolumeClaimControllerResizeInProgress
	var conditions []corev1.PersistentVolumeClaimCondition
	switch {
	case refused != nil:
		phase = corev1.PersistentVolumeClaimControllerResizeInfeasible
		conditions = []corev1.PersistentVolumeClaimCondition{{
			Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue,
			Reason: kubeoceanv1alpha1.ReasonVolumeResizeFailed, Message: refused.message,
		}}
	default:
		for _, c := range holder.Status.Conditions {
			if slices.Contains(resizeConditions, c.Type) {
				conditions = append(conditions, c)
			}
		}
		if got, ok := holder.Status.AllocatedResourceStatuses[corev1.ResourceStorage]; ok {
			phase = got
		}
		if len(conditions) == 0 {
			conditions = []corev1.PersistentVolumeClaimCondition{{
				Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue, Reason: kubeoceanv1alpha1.ReasonResizing,
				Message: "Waiting for the physical cluster to resize the volume",
			}}
		}
	}
	for _, c := range conditions {
		status.Conditions = append(status.Conditions, stamped(c, previous, now))
	}
	if status.AllocatedResourceStatuses == nil {
		status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	status.AllocatedResourceStatuses[corev1.ResourceStorage] = phase
	return status
}

// stamped gives c the times of the same condition in previous, or now for
// those it lacks.
func stamped(c corev1.PersistentVolumeClaimCondition, previous []corev1.PersistentVolumeClaimCondition, now metav1.Time) corev1.PersistentVolumeClaimCondition {
	for _, p := range previous {
		if p.Type == c.Type && p.Status == c.Status && p.Reason == c.Reason && p.Message == c.Message {
			c.LastTransitionTime, c.LastProbeTime = p.LastTransitionTime, p.LastProbeTime
			return c
		}
	}
	if c.LastTransitionTime.IsZero() {
		c.LastTransitionTime = now
	}
	return c
}
