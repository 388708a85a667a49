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

package podstatus

import (
	corev1 "k8s.io/api/core/v1"
)

// mirroredStatus is the status the virtual pod should have: what the
// physical pod's kubelet reports, except the fields that belong to the
// virtual cluster or that its apiserver would reject or rewrite. Keeping
// those exactly as the virtual pod has them also keeps the comparison with
// the stored status exact, so a reconcile never writes twice.
//
// Copied from the physical pod: phase, message, reason, host and pod IPs,
// start time, the container statuses of every kind, the pod-level
// resources and allocations, and the (deprecated) resize state, all of
// which describe the one running workload.
//
// Kept from the virtual pod:
//   - qosClass: immutable after creation (the apiserver rejects a change)
//     and computed by the virtual apiserver from the same requests.
//   - nominatedNodeName: the virtual scheduler's field; the apiserver
//     forbids setting it on a bound pod, and a physical node name means
//     nothing in the virtual cluster.
//   - observedGeneration, also that of conditions: physical generations
//     count changes of the physical spec, not of the virtual one; and the
//     apiserver puts the old value back when a write clears it.
//   - resourceClaimStatuses, extendedResourceClaimStatus,
//     nodeAllocatableResourceClaimStatuses: they name physical claims and
//     are validated against the virtual pod's spec.resourceClaims.
//
// Conditions are merged by type (see mergeConditions).
func mirroredStatus(virtual, physical corev1.PodStatus) corev1.PodStatus {
	out := *virtual.DeepCopy()
	from := physical.DeepCopy()

	out.Phase = from.Phase
	out.Message = from.Message
	out.Reason = from.Reason
	out.HostIP = from.HostIP
	out.HostIPs = from.HostIPs
	out.PodIP = from.PodIP
	out.PodIPs = from.PodIPs
	out.StartTime = from.StartTime
	out.InitContainerStatuses = from.InitContainerStatuses
	out.ContainerStatuses = from.ContainerStatuses
	out.EphemeralContainerStatuses = from.EphemeralContainerStatuses
	out.Resize = from.Resize
	out.AllocatedResources = from.AllocatedResources
	out.Resources = from.Resources
	out.Conditions = mergeConditions(out.Conditions, from.Conditions)
	return out
}

// mergeConditions takes the physical pod's conditions over those of the
// same type on the virtual pod, keeping the virtual pod's order and
// observedGeneration, and appends the types the virtual pod lacks.
// Conditions only the virtual pod has stay: controllers of the virtual
// cluster own them (DisruptionTarget from an eviction, readiness-gate
// conditions), and dropping them would make us fight those controllers.
func mergeConditions(virtual, physical []corev1.PodCondition) []corev1.PodCondition {
	byType := make(map[corev1.PodConditionType]corev1.PodCondition, len(physical))
	for _, condition := range physical {
		if _, seen := byType[condition.Type]; !seen {
			byType[condition.Type] = condition
		}
	}
	merged := make([]corev1.PodCondition, 0, len(virtual)+len(physical))
	taken := make(map[corev1.PodConditionType]bool, len(physical))
	for _, condition := range virtual {
		reported, ok := byType[condition.Type]
		switch {
		case !ok:
			merged = append(merged, condition)
		case !taken[condition.Type]:
			reported.ObservedGeneration = condition.ObservedGeneration
			merged = append(merged, reported)
			taken[condition.Type] = true
		}
		// A second virtual condition of a type the physical pod reports
		// is dropped: the physical one replaces the type as a whole.
	}
	for _, condition := range physical {
		if !taken[condition.Type] {
			condition.ObservedGeneration = 0
			merged = append(merged, condition)
			taken[condition.Type] = true
		}
	}
	if len(merged) == 0 {
		return virtual
	}
	return merged
}
