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

package capacity

import (
	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// HoldsResources reports whether pod occupies resources on its node: it is
// bound to a node and has not finished. A pod being deleted still holds
// them until it is gone.
func HoldsResources(pod *corev1.Pod) bool {
	return pod.Spec.NodeName != "" && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// PodRequests is what pod takes from its node's allocatable, as the
// scheduler computes it: the larger of the init containers' and the
// containers' requests (with sidecars), or the pod-level requests, plus the
// pod overhead, plus one of the node's pod slots.
func PodRequests(pod *corev1.Pod) corev1.ResourceList {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	requests[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return requests
}

// Add adds delta to total in place.
func Add(total, delta corev1.ResourceList) {
	for name, q := range delta {
		sum := total[name]
		sum.Add(q)
		total[name] = sum
	}
}

// Lendable is what a node lends: per resource of allocatable, what the
// pods not run by Kubeocean leave free (never negative), capped by the
// policy's limit for that resource — the smaller of its quantity and its
// percent of what is free. Resources without a limit are lent in full.
func Lendable(allocatable, used corev1.ResourceList, limits []kubeoceanv1alpha1.ResourceLimit) corev1.ResourceList {
	lendable := make(corev1.ResourceList, len(allocatable))
	for name, alloc := range allocatable {
		free := alloc.DeepCopy()
		if u, ok := used[name]; ok {
			free.Sub(u)
		}
		if free.Sign() < 0 {
			free = *resource.NewQuantity(0, alloc.Format)
		}
		lendable[name] = free
	}
	for _, limit := range limits {
		free, ok := lendable[limit.Resource]
		if !ok {
			continue
		}
		if limit.Percent != nil {
			if share := percentOf(limit.Resource, free, *limit.Percent); share.Cmp(free) < 0 {
				free = share
			}
		}
		if limit.Quantity != nil && limit.Quantity.Cmp(free) < 0 {
			free = limit.Quantity.DeepCopy()
		}
		lendable[limit.Resource] = free
	}
	return lendable
}

// percentOf rounds down: CPU to the millicore, everything else (bytes,
// devices, pod slots) to a whole unit, so a node never advertises a
// fraction of a GPU or of a byte. It computes in decimals: a quantity near
// the int64 range overflows as milli-units.
func percentOf(name corev1.ResourceName, q resource.Quantity, percent int32) resource.Quantity {
	var decimals inf.Scale
	if name == corev1.ResourceCPU {
		decimals = 3
	}
	share := new(inf.Dec).Mul(q.AsDec(), inf.NewDec(int64(percent), 0))
	share.QuoRound(share, inf.NewDec(100, 0), decimals, inf.RoundDown)
	return *resource.NewDecimalQuantity(*share, q.Format)
}
