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

package compact

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestRequestSets(t *testing.T) {
	cpu := Amount{Name: corev1.ResourceCPU, Milli: 500}
	memory := Amount{Name: corev1.ResourceMemory, Milli: 1 << 40}
	gpu := Amount{Name: "nvidia.com/gpu", Milli: 1000}
	storage := Amount{Name: corev1.ResourceEphemeralStorage, Milli: 2 << 40}
	huge := Amount{Name: "hugepages-2Mi", Milli: 0}
	tests := []struct {
		name string
		in   []Amount
		want []Amount
	}{
		{"none", nil, nil},
		{"CPU and memory", []Amount{memory, cpu}, []Amount{cpu, memory}},
		{"more than the head holds", []Amount{gpu, storage, memory, huge, cpu}, []Amount{cpu, storage, huge, memory, gpu}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := internRequests(tt.in)
			if got := set.Value().amounts(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("amounts = %v, want %v", got, tt.want)
			}
			reversed := make([]Amount, len(tt.in))
			for i, a := range tt.in {
				reversed[len(tt.in)-1-i] = a
			}
			if internRequests(reversed) != set {
				t.Fatal("the same requests in another order are not shared")
			}
		})
	}
	if internRequests([]Amount{cpu}) == internRequests([]Amount{{Name: corev1.ResourceCPU, Milli: 501}}) {
		t.Fatal("different requests share one set")
	}
}
