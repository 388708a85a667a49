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
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func TestUsageHandlerSumsEveryEventAndPassesItOn(t *testing.T) {
	sums := compact.NewUsageByNode()
	var queued []string
	h := usageHandler{sums: sums, next: controller.Handler[*compact.PodUsage, string]{
		Enqueue: func(k string) { queued = append(queued, k) }, Keys: usageNodeKeys,
	}}
	usageOf := func(pod *corev1.Pod, rv string) *compact.PodUsage {
		pod = pod.DeepCopy()
		pod.ResourceVersion = rv
		obj, _ := compact.ForeignPod(testOwner)(pod)
		return obj.(*compact.PodUsage)
	}
	running := usageOf(foreignPod("batch", "node-a", "1500m", corev1.PodRunning), "1")
	moved := usageOf(foreignPod("batch", "node-b", "1500m", corev1.PodRunning), "2")

	h.OnAdd(running, true)
	if cpu := sums.Of("node-a")[corev1.ResourceCPU]; cpu.MilliValue() != 1500 {
		t.Fatalf("after add, node-a holds %v CPU", cpu.String())
	}
	h.OnUpdate(running, moved)
	if onB := sums.Of("node-b"); len(sums.Of("node-a")) != 0 || onB.Cpu().MilliValue() != 1500 {
		t.Fatalf("after a move: node-a %v, node-b %v", sums.Of("node-a"), sums.Of("node-b"))
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "apps/batch", Obj: moved})
	if len(sums.Of("node-b")) != 0 {
		t.Fatalf("a tombstone left %v on node-b", sums.Of("node-b"))
	}
	if want := []string{"node-a", "node-a", "node-b", "node-b"}; len(queued) != len(want) {
		t.Fatalf("queued %v, want %v", queued, want)
	}
}
