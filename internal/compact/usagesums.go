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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// UsageByNode sums, per node, what the pods of a PodUsage cache hold.
// Fed every change of the cache, it answers for a node without walking its
// pods, and spares the cache an index by node name, which for tens of
// thousands of pods costs more memory than the sums. It is safe for
// concurrent use.
type UsageByNode struct {
	mu sync.Mutex
	// nodes holds each node's sums in milli-units, the pod slots as
	// corev1.ResourcePods; a node without pods holding resources is absent.
	nodes map[string][]Amount
}

// NewUsageByNode returns empty sums.
func NewUsageByNode() *UsageByNode {
	return &UsageByNode{nodes: map[string][]Amount{}}
}

// Update replaces old with updated in the sums. Either may be nil: a pod
// that appears has no old version, one that goes has no updated one.
func (s *UsageByNode) Update(old, updated *PodUsage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old != nil {
		s.add(old, -1)
	}
	if updated != nil {
		s.add(updated, 1)
	}
}

func (s *UsageByNode) add(u *PodUsage, sign int64) {
	if !u.HoldsResources || u.NodeName == "" {
		return
	}
	sums := addAmount(s.nodes[u.NodeName], corev1.ResourcePods, sign*1000)
	for _, a := range u.Requests() {
		sums = addAmount(sums, a.Name, sign*a.Milli)
	}
	if len(sums) == 0 {
		delete(s.nodes, u.NodeName)
		return
	}
	s.nodes[u.NodeName] = sums
}

// addAmount adds milli to the sum of name, dropping a sum that reaches zero.
func addAmount(sums []Amount, name corev1.ResourceName, milli int64) []Amount {
	for i := range sums {
		if sums[i].Name != name {
			continue
		}
		if sums[i].Milli += milli; sums[i].Milli == 0 {
			return append(sums[:i], sums[i+1:]...)
		}
		return sums
	}
	return append(sums, Amount{Name: name, Milli: milli})
}

// Of returns what the pods on node hold, pod slots included; empty for a
// node without such pods.
func (s *UsageByNode) Of(node string) corev1.ResourceList {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := make(corev1.ResourceList, len(s.nodes[node]))
	for _, a := range s.nodes[node] {
		if a.Name == corev1.ResourcePods {
			total[a.Name] = *resource.NewQuantity(a.Milli/1000, resource.DecimalSI)
			continue
		}
		total[a.Name] = *resource.NewMilliQuantity(a.Milli, resource.DecimalSI)
	}
	return total
}
