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
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func usage(node string, holds bool, cpuMilli, memory int64) *PodUsage {
	var amounts []Amount
	if cpuMilli > 0 {
		amounts = append(amounts, Amount{Name: corev1.ResourceCPU, Milli: cpuMilli})
	}
	if memory > 0 {
		amounts = append(amounts, Amount{Name: corev1.ResourceMemory, Milli: memory * 1000})
	}
	return NewPodUsage("apps", "p", node, holds, amounts...)
}

func TestUsageByNodeFollowsEveryChange(t *testing.T) {
	s := NewUsageByNode()
	a := usage("n1", true, 500, 1<<30)
	b := usage("n1", true, 250, 0)
	s.Update(nil, a)
	s.Update(nil, b)
	s.Update(nil, usage("n1", false, 4000, 0)) // finished or Kubeocean's: holds nothing
	s.Update(nil, usage("", true, 4000, 0))    // not bound yet
	expect(t, s, "n1", list("cpu", "750m", "memory", "1Gi", "pods", "2"))

	moved := usage("n2", true, 250, 0)
	s.Update(b, moved)
	expect(t, s, "n1", list("cpu", "500m", "memory", "1Gi", "pods", "1"))
	expect(t, s, "n2", list("cpu", "250m", "pods", "1"))

	grown := usage("n1", true, 1000, 2<<30)
	s.Update(a, grown)
	expect(t, s, "n1", list("cpu", "1", "memory", "2Gi", "pods", "1"))

	finished := usage("n1", false, 1000, 2<<30)
	s.Update(grown, finished)
	s.Update(finished, nil)
	s.Update(moved, nil)
	expect(t, s, "n1", corev1.ResourceList{})
	expect(t, s, "n2", corev1.ResourceList{})
	if len(s.nodes) != 0 {
		t.Fatalf("nodes without pods are still held: %v", s.nodes)
	}
}

func TestUsageByNodeIsSafeForConcurrentUse(t *testing.T) {
	s := NewUsageByNode()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				u := usage("n1", true, 10, 0)
				s.Update(nil, u)
				_ = s.Of("n1")
				s.Update(u, nil)
			}
		})
	}
	wg.Wait()
	expect(t, s, "n1", corev1.ResourceList{})
}

func expect(t *testing.T, s *UsageByNode, node string, want corev1.ResourceList) {
	t.Helper()
	if got := s.Of(node); !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("usage of %s = %v, want %v", node, got, want)
	}
}
