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

package node

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// outOfWindowTaint decides the out-of-time-windows taint of a virtual node
// outside its policy's windows (docs/operations.md §5), given the
// taint the node has now (nil if none). Without forced reclaim the taint
// only stops new pods (NoSchedule). With it, running pods are evicted
// (NoExecute) once the graceful period has passed since the taint was first
// added; until then the second return value says when to look again.
func outOfWindowTaint(existing *corev1.Taint, policy *kubeoceanv1alpha1.ResourceLeasingPolicy, now time.Time) (corev1.Taint, time.Duration) {
	taint := corev1.Taint{Key: kubeoceanv1alpha1.TaintOutOfTimeWindows, Effect: corev1.TaintEffectNoSchedule}
	added := now
	if existing != nil && existing.TimeAdded != nil {
		added = existing.TimeAdded.Time
	}
	taint.TimeAdded = &metav1.Time{Time: added.Truncate(time.Second)}

	if !policy.Spec.ForceReclaim {
		return taint, 0
	}
	grace := time.Duration(policy.Spec.GracefulReclaimPeriodSeconds) * time.Second
	switch {
	case grace == 0:
		taint.Effect = corev1.TaintEffectNoExecute
	case existing == nil:
		// First seen outside the window: pods get the whole period.
		return taint, grace
	case existing.Effect == corev1.TaintEffectNoExecute:
		taint.Effect = corev1.TaintEffectNoExecute
	case existing.TimeAdded == nil:
		// We cannot tell how long the node has been outside: reclaim now
		// rather than never.
		taint.Effect = corev1.TaintEffectNoExecute
	default:
		if remaining := added.Add(grace).Sub(now); remaining > 0 {
			return taint, remaining
		}
		taint.Effect = corev1.TaintEffectNoExecute
	}
	return taint, 0
}

// findTaint returns the taint with key on node, nil if none.
func findTaint(taints []corev1.Taint, key string) *corev1.Taint {
	for i := range taints {
		if taints[i].Key == key {
			return &taints[i]
		}
	}
	return nil
}
