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
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func findCondition(conditions []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// setDependenciesReady writes kubeoceanv1alpha1.PodConditionDependenciesReady when it changes.
// True is written only over a False: a pod that never waited keeps no
// condition, and costs no write. changed tells whether it was written.
func (c *Controller) setDependenciesReady(ctx context.Context, virtual *corev1.Pod, status corev1.ConditionStatus, reason, message string) (bool, error) {
	existing := findCondition(virtual.Status.Conditions, kubeoceanv1alpha1.PodConditionDependenciesReady)
	if existing == nil && status == corev1.ConditionTrue {
		return false, nil
	}
	if existing != nil && existing.Status == status && existing.Reason == reason && existing.Message == message {
		return false, nil
	}
	updated := virtual.DeepCopy()
	condition := findCondition(updated.Status.Conditions, kubeoceanv1alpha1.PodConditionDependenciesReady)
	if condition == nil {
		updated.Status.Conditions = append(updated.Status.Conditions, corev1.PodCondition{Type: kubeoceanv1alpha1.PodConditionDependenciesReady})
		condition = &updated.Status.Conditions[len(updated.Status.Conditions)-1]
	}
	if condition.Status != status {
		condition.LastTransitionTime = metav1.NewTime(c.clock.Now())
	}
	condition.Status, condition.Reason, condition.Message = status, reason, message
	if _, err := c.virtualClient.Pods(virtual.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("setting %s=%s on virtual pod %s/%s: %w", kubeoceanv1alpha1.PodConditionDependenciesReady, status, virtual.Namespace, virtual.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Set dependencies condition", "status", status, "reason", reason)
	return true, nil
}

// failedStatus is the status of a virtual pod whose physical pod is gone:
// Failed, with every container terminated the way the kubelet reports a
// container it lost track of, and the pod no longer ready.
func failedStatus(status corev1.PodStatus, message string, now metav1.Time) corev1.PodStatus {
	out := *status.DeepCopy()
	out.Phase = corev1.PodFailed
	out.Reason = kubeoceanv1alpha1.ReasonPhysicalPodLost
	out.Message = message
	terminate := func(statuses []corev1.ContainerStatus) {
		for i := range statuses {
			s := &statuses[i]
			if s.State.Terminated == nil {
				s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "ContainerStatusUnknown", FinishedAt: now,
					Message: "The container could not be located when the pod was terminated",
				}}
			}
			s.Ready = false
			s.Started = ptr.To(false)
		}
	}
	terminate(out.InitContainerStatuses)
	terminate(out.ContainerStatuses)
	for _, t := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if condition := findCondition(out.Conditions, t); condition != nil && condition.Status != corev1.ConditionFalse {
			condition.Status, condition.Reason, condition.LastTransitionTime = corev1.ConditionFalse, kubeoceanv1alpha1.ReasonPhysicalPodLost, now
		}
	}
	return out
}

// markFailed fails the virtual pod whose physical pod is gone. A conflict
// is retried at once from a live read: after the virtual apiserver comes
// back, the cache is often behind other writers of the pod's status (the
// bottom-up side), and a status-only change of the pod brings no event
// that would requeue it, so waiting on the queue would only delay a pod
// that is known to be lost.
func (c *Controller) markFailed(ctx context.Context, virtual *corev1.Pod, message string) error {
	pods := c.virtualClient.Pods(virtual.Namespace)
	for attempt := 0; ; attempt++ {
		updated := virtual.DeepCopy()
		updated.Status = failedStatus(virtual.Status, message, metav1.NewTime(c.clock.Now()))
		_, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
		switch {
		case err == nil:
			klog.FromContext(ctx).Info("Marked virtual pod Failed: its physical pod is gone", "message", message)
			c.recorder.Event(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPhysicalPodLost, message)
			return nil
		case apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || attempt >= maxStatusConflicts:
			return fmt.Errorf("failing virtual pod %s/%s: %w", virtual.Namespace, virtual.Name, err)
		}
		live, getErr := pods.Get(ctx, virtual.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(getErr):
			return nil
		case getErr != nil:
			return fmt.Errorf("re-reading virtual pod %s/%s after a conflict: %w", virtual.Namespace, virtual.Name, getErr)
		case isFinished(live):
			return nil
		case !sameLostPod(virtual, live):
			// The pod changed in what the decision rests on; decide again
			// from the cache.
			return fmt.Errorf("failing virtual pod %s/%s: %w", virtual.Namespace, virtual.Name, err)
		}
		virtual = live
	}
}

// maxStatusConflicts bounds the live re-reads of one markFailed: each
// conflict means someone else wrote in between, which does not go on.
const maxStatusConflicts = 3

func isFinished(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// sameLostPod tells whether live is still the pod cached was found lost
// for: the same pod, mapped to the same physical pod.
func sameLostPod(cached, live *corev1.Pod) bool {
	if cached.UID != live.UID || (cached.DeletionTimestamp == nil) != (live.DeletionTimestamp == nil) {
		return false
	}
	for _, k := range []string{kubeoceanv1alpha1.AnnotationPhysicalPodNamespace, kubeoceanv1alpha1.AnnotationPhysicalPodName, kubeoceanv1alpha1.AnnotationPhysicalPodUID} {
		if cached.Annotations[k] != live.Annotations[k] {
			return false
		}
	}
	return true
}
