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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestStatusPatchOfChangedFieldsIsTheWholeStatusPatch(t *testing.T) {
	base := func() corev1.NodeStatus {
		return corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), "example.com/gpu": resource.MustParse("2")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7"), corev1.ResourceMemory: resource.MustParse("30Gi")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Unix(100, 0)},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", Architecture: "amd64"},
			Phase:           corev1.NodeRunning,
		}
	}
	// A semantically equal value is no change: the whole patch rewrites
	// it, the changed fields leave it.
	cases := []struct {
		name            string
		change          func(*corev1.NodeStatus)
		changed         bool
		allocatableOnly bool
	}{
		{name: "nothing", change: func(*corev1.NodeStatus) {}},
		{name: "allocatable cpu", changed: true, allocatableOnly: true, change: func(s *corev1.NodeStatus) {
			s.Allocatable[corev1.ResourceCPU] = resource.MustParse("6500m")
		}},
		{name: "a resource gone", changed: true, change: func(s *corev1.NodeStatus) { delete(s.Capacity, "example.com/gpu") }},
		{name: "a condition", changed: true, change: func(s *corev1.NodeStatus) {
			s.Conditions[0].Status, s.Conditions[0].Reason = corev1.ConditionFalse, "PhysicalNodeNotReady"
		}},
		{name: "a condition gone and an address added", changed: true, change: func(s *corev1.NodeStatus) {
			s.Conditions = s.Conditions[:1]
			s.Addresses = append(s.Addresses, corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-a"})
		}},
		{name: "port and version", changed: true, change: func(s *corev1.NodeStatus) {
			s.DaemonEndpoints.KubeletEndpoint.Port = 10251
			s.NodeInfo.KubeletVersion = "v1.34.0"
		}},
		{name: "the same quantity written otherwise", change: func(s *corev1.NodeStatus) {
			s.Allocatable[corev1.ResourceCPU] = resource.MustParse("7000m")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, after := base(), base()
			tc.change(&after)
			whole, err := statusPatch(before, after)
			if err != nil {
				t.Fatal(err)
			}
			b, a, changed := changedStatus(before, after)
			part, err := statusPatch(b, a)
			if err != nil {
				t.Fatal(err)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			if tc.changed && string(part) != string(whole) {
				t.Errorf("patch of the changed fields\n  %s\nwant the whole status's\n  %s", part, whole)
			}
			if !tc.changed && string(part) != "{}" {
				t.Errorf("patch with nothing changed = %s, want {}", part)
			}
			if tc.allocatableOnly && (b.Conditions != nil || a.Capacity != nil || a.NodeInfo.KubeletVersion != "" || a.Allocatable == nil) {
				t.Errorf("left %+v, want the allocatable figures alone", a)
			}
		})
	}
}

// BenchmarkStatusPatch compares the patch of a capacity change made from
// the whole statuses with the one made from the fields that changed.
func BenchmarkStatusPatch(b *testing.B) {
	before := corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("7"), corev1.ResourceMemory: resource.MustParse("30Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: metav1.Unix(100, 0), LastTransitionTime: metav1.Unix(50, 0)},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
			{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
			{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}, {Type: corev1.NodeHostName, Address: "node-a"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", Architecture: "amd64", OperatingSystem: "linux", OSImage: "Debian", ContainerRuntimeVersion: "containerd://2.0.0"},
	}
	after := before
	after.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6990m"), corev1.ResourceMemory: resource.MustParse("30Gi"), corev1.ResourcePods: resource.MustParse("109")}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !equality.Semantic.DeepEqual(before, after) {
				if _, err := statusPatch(before, after); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("changed", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if x, y, changed := changedStatus(before, after); changed {
				if _, err := statusPatch(x, y); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
