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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func condition(typ corev1.PodConditionType, status corev1.ConditionStatus, generation int64) corev1.PodCondition {
	return corev1.PodCondition{Type: typ, Status: status, ObservedGeneration: generation, LastTransitionTime: t0}
}

// pendingStatus is a virtual pod just bound by the virtual scheduler.
func pendingStatus() corev1.PodStatus {
	return corev1.PodStatus{
		Phase:              corev1.PodPending,
		QOSClass:           corev1.PodQOSBurstable,
		ObservedGeneration: 1,
		Conditions:         []corev1.PodCondition{condition(corev1.PodScheduled, corev1.ConditionTrue, 1)},
	}
}

// runningStatus is what kubelet (or kwok) reports for a running pod.
func runningStatus() corev1.PodStatus {
	return corev1.PodStatus{
		Phase:              corev1.PodRunning,
		ObservedGeneration: 7,
		QOSClass:           corev1.PodQOSBestEffort,
		NominatedNodeName:  "physical-node-2",
		Conditions: []corev1.PodCondition{
			condition(corev1.PodInitialized, corev1.ConditionTrue, 7),
			condition(corev1.PodReady, corev1.ConditionTrue, 7),
			condition(corev1.ContainersReady, corev1.ConditionTrue, 7),
			condition(corev1.PodScheduled, corev1.ConditionTrue, 7),
		},
		HostIP:    "10.0.0.1",
		HostIPs:   []corev1.HostIP{{IP: "10.0.0.1"}},
		PodIP:     "10.244.0.5",
		PodIPs:    []corev1.PodIP{{IP: "10.244.0.5"}},
		StartTime: &t0,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "app", Ready: true, Image: "pause", ImageID: "sha256:1", ContainerID: "containerd://1",
			State:              corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: t0}},
			AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"},
		}}},
		EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "debug"}},
		Resize:                     corev1.PodResizeStatusInProgress,
		AllocatedResources:         corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		ResourceClaimStatuses:      []corev1.PodResourceClaimStatus{{Name: "physical-claim"}},
	}
}

func TestMirroredStatus(t *testing.T) {
	virtual := pendingStatus()
	virtual.NominatedNodeName = ""
	virtual.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "virtual-claim"}}
	virtual.Conditions = append(virtual.Conditions, condition(corev1.DisruptionTarget, corev1.ConditionTrue, 1))
	physical := runningStatus()

	got := mirroredStatus(virtual, physical)

	copied := []struct {
		name      string
		got, want any
	}{
		{"phase", got.Phase, physical.Phase},
		{"hostIP", got.HostIP, physical.HostIP},
		{"hostIPs", got.HostIPs, physical.HostIPs},
		{"podIP", got.PodIP, physical.PodIP},
		{"podIPs", got.PodIPs, physical.PodIPs},
		{"startTime", got.StartTime, physical.StartTime},
		{"containerStatuses", got.ContainerStatuses, physical.ContainerStatuses},
		{"initContainerStatuses", got.InitContainerStatuses, physical.InitContainerStatuses},
		{"ephemeralContainerStatuses", got.EphemeralContainerStatuses, physical.EphemeralContainerStatuses},
		{"resize", got.Resize, physical.Resize},
		{"allocatedResources", got.AllocatedResources, physical.AllocatedResources},
		// Kept from the virtual pod.
		{"qosClass", got.QOSClass, virtual.QOSClass},
		{"nominatedNodeName", got.NominatedNodeName, virtual.NominatedNodeName},
		{"observedGeneration", got.ObservedGeneration, virtual.ObservedGeneration},
		{"resourceClaimStatuses", got.ResourceClaimStatuses, virtual.ResourceClaimStatuses},
	}
	for _, c := range copied {
		if !equality.Semantic.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}

	wantConditions := []corev1.PodCondition{
		condition(corev1.PodScheduled, corev1.ConditionTrue, 1), // physical value, virtual generation
		condition(corev1.DisruptionTarget, corev1.ConditionTrue, 1),
		condition(corev1.PodInitialized, corev1.ConditionTrue, 0),
		condition(corev1.PodReady, corev1.ConditionTrue, 0),
		condition(corev1.ContainersReady, corev1.ConditionTrue, 0),
	}
	if !equality.Semantic.DeepEqual(got.Conditions, wantConditions) {
		t.Errorf("conditions = %+v, want %+v", got.Conditions, wantConditions)
	}

	// The result shares no memory with the physical pod in the cache.
	got.ContainerStatuses[0].Name = "changed"
	if physical.ContainerStatuses[0].Name != "app" {
		t.Error("mirroredStatus aliases the physical pod's container statuses")
	}
}

func TestMirroredStatusIsAFixedPoint(t *testing.T) {
	// Once written, mirroring again changes nothing: this is what keeps a
	// second reconcile from writing.
	physical := runningStatus()
	once := mirroredStatus(pendingStatus(), physical)
	twice := mirroredStatus(once, physical)
	if !equality.Semantic.DeepEqual(once, twice) {
		t.Errorf("second mirror differs:\n%+v\n%+v", once, twice)
	}
}

func TestMergeConditions(t *testing.T) {
	ready := func(s corev1.ConditionStatus, g int64) corev1.PodCondition { return condition(corev1.PodReady, s, g) }
	scheduled := func(g int64) corev1.PodCondition { return condition(corev1.PodScheduled, corev1.ConditionTrue, g) }
	gate := condition("example.com/gate", corev1.ConditionTrue, 3)

	tests := []struct {
		name              string
		virtual, physical []corev1.PodCondition
		want              []corev1.PodCondition
	}{
		{name: "both empty"},
		{
			name:     "physical only",
			physical: []corev1.PodCondition{ready(corev1.ConditionTrue, 4)},
			want:     []corev1.PodCondition{ready(corev1.ConditionTrue, 0)},
		},
		{
			name:    "virtual only",
			virtual: []corev1.PodCondition{scheduled(2)},
			want:    []corev1.PodCondition{scheduled(2)},
		},
		{
			name:     "physical wins for its types, keeping the virtual generation",
			virtual:  []corev1.PodCondition{ready(corev1.ConditionFalse, 2), gate},
			physical: []corev1.PodCondition{ready(corev1.ConditionTrue, 9)},
			want:     []corev1.PodCondition{ready(corev1.ConditionTrue, 2), gate},
		},
		{
			name:     "virtual order kept, new types appended in physical order",
			virtual:  []corev1.PodCondition{gate, scheduled(1)},
			physical: []corev1.PodCondition{ready(corev1.ConditionTrue, 9), scheduled(9)},
			want:     []corev1.PodCondition{gate, scheduled(1), ready(corev1.ConditionTrue, 0)},
		},
		{
			name:     "duplicate virtual types collapse to the physical one",
			virtual:  []corev1.PodCondition{ready(corev1.ConditionFalse, 1), ready(corev1.ConditionUnknown, 1)},
			physical: []corev1.PodCondition{ready(corev1.ConditionTrue, 9)},
			want:     []corev1.PodCondition{ready(corev1.ConditionTrue, 1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mergeConditions(tt.virtual, tt.physical)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
