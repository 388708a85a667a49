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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func container(pairs ...string) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: list(pairs...)}}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := container("cpu", "100m", "memory", "64Mi")
	sidecar.RestartPolicy = &always
	tests := []struct {
		name string
		spec corev1.PodSpec
		want corev1.ResourceList
	}{
		{name: "sum of containers",
			spec: corev1.PodSpec{Containers: []corev1.Container{container("cpu", "1", "memory", "1Gi"), container("cpu", "500m")}},
			want: list("cpu", "1500m", "memory", "1Gi", "pods", "1")},
		{name: "a larger init container wins",
			spec: corev1.PodSpec{InitContainers: []corev1.Container{container("cpu", "2")}, Containers: []corev1.Container{container("cpu", "1", "memory", "1Gi")}},
			want: list("cpu", "2", "memory", "1Gi", "pods", "1")},
		{name: "a smaller init container does not count",
			spec: corev1.PodSpec{InitContainers: []corev1.Container{container("cpu", "100m")}, Containers: []corev1.Container{container("cpu", "1")}},
			want: list("cpu", "1", "pods", "1")},
		{name: "sidecars add to the containers",
			spec: corev1.PodSpec{InitContainers: []corev1.Container{sidecar}, Containers: []corev1.Container{container("cpu", "1")}},
			want: list("cpu", "1100m", "memory", "64Mi", "pods", "1")},
		{name: "overhead is added",
			spec: corev1.PodSpec{Containers: []corev1.Container{container("cpu", "1")}, Overhead: list("cpu", "250m", "memory", "120Mi")},
			want: list("cpu", "1250m", "memory", "120Mi", "pods", "1")},
		{name: "no requests still takes a pod slot",
			spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			want: list("pods", "1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PodRequests(&corev1.Pod{Spec: tt.spec})
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("PodRequests = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHoldsResources(t *testing.T) {
	tests := []struct {
		node  string
		phase corev1.PodPhase
		want  bool
	}{
		{node: "n1", phase: corev1.PodRunning, want: true},
		{node: "n1", phase: corev1.PodPending, want: true},
		{node: "n1", phase: corev1.PodSucceeded},
		{node: "n1", phase: corev1.PodFailed},
		{node: "", phase: corev1.PodPending},
	}
	for _, tt := range tests {
		pod := &corev1.Pod{Spec: corev1.PodSpec{NodeName: tt.node}, Status: corev1.PodStatus{Phase: tt.phase}}
		if got := HoldsResources(pod); got != tt.want {
			t.Errorf("HoldsResources(node=%q, phase=%s) = %v, want %v", tt.node, tt.phase, got, tt.want)
		}
	}
}

func TestLendable(t *testing.T) {
	limit := func(name string, quantity string, percent *int32) kubeoceanv1alpha1.ResourceLimit {
		l := kubeoceanv1alpha1.ResourceLimit{Resource: corev1.ResourceName(name), Percent: percent}
		if quantity != "" {
			l.Quantity = ptr.To(resource.MustParse(quantity))
		}
		return l
	}
	allocatable := list("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4")
	tests := []struct {
		name   string
		used   corev1.ResourceList
		limits []kubeoceanv1alpha1.ResourceLimit
		want   corev1.ResourceList
	}{
		{name: "nothing used, no limits: everything",
			want: allocatable},
		{name: "foreign pods are subtracted",
			used: list("cpu", "2500m", "memory", "4Gi", "pods", "3"),
			want: list("cpu", "5500m", "memory", "28Gi", "pods", "107", "nvidia.com/gpu", "4")},
		{name: "never negative",
			used: list("cpu", "9", "memory", "40Gi"),
			want: list("cpu", "0", "memory", "0", "pods", "110", "nvidia.com/gpu", "4")},
		{name: "percent of what is free",
			used:   list("cpu", "2"),
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("cpu", "", ptr.To[int32](50))},
			want:   list("cpu", "3", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4")},
		{name: "quantity caps",
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("memory", "10Gi", nil)},
			want:   list("cpu", "8", "memory", "10Gi", "pods", "110", "nvidia.com/gpu", "4")},
		{name: "the smaller of quantity and percent wins: percent",
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("cpu", "6", ptr.To[int32](25))},
			want:   list("cpu", "2", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4")},
		{name: "the smaller of quantity and percent wins: quantity",
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("cpu", "1", ptr.To[int32](25))},
			want:   list("cpu", "1", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4")},
		{name: "a quantity above what is free lends only what is free",
			used:   list("memory", "30Gi"),
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("memory", "10Gi", nil)},
			want:   list("cpu", "8", "memory", "2Gi", "pods", "110", "nvidia.com/gpu", "4")},
		{name: "percent rounds devices down to whole units and cpu to millicores",
			used:   list("cpu", "1"),
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("nvidia.com/gpu", "", ptr.To[int32](30)), limit("cpu", "", ptr.To[int32](33))},
			want:   list("cpu", "2310m", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "1")},
		{name: "zero percent lends none",
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("nvidia.com/gpu", "", ptr.To[int32](0))},
			want:   list("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "0")},
		{name: "a limit on a resource the node lacks adds nothing",
			limits: []kubeoceanv1alpha1.ResourceLimit{limit("example.com/fpga", "2", nil)},
			want:   allocatable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Lendable(allocatable, tt.used, tt.limits)
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Fatalf("Lendable = %v, want %v", got, tt.want)
			}
		})
	}
}

// Found by FuzzResourceLimit: a CPU quantity near the int64 range
// overflowed as millicores and lent a negative amount.
func TestPercentOfDoesNotOverflow(t *testing.T) {
	tests := []struct {
		name    corev1.ResourceName
		q, want string
		percent int32
	}{
		{name: corev1.ResourceCPU, q: "9223372036854775807", percent: 50, want: "4611686018427387903500m"},
		{name: corev1.ResourceMemory, q: "9223372036854775807", percent: 50, want: "4611686018427387903"},
		{name: corev1.ResourceCPU, q: "3", percent: 33, want: "990m"},
		{name: corev1.ResourceCPU, q: "1m", percent: 50, want: "0"},
		{name: corev1.ResourceMemory, q: "3", percent: 50, want: "1"},
	}
	for _, tt := range tests {
		got := percentOf(tt.name, resource.MustParse(tt.q), tt.percent)
		if got.Cmp(resource.MustParse(tt.want)) != 0 {
			t.Errorf("%d%% of %s %s = %s, want %s", tt.percent, tt.q, tt.name, got.String(), tt.want)
		}
	}
}
