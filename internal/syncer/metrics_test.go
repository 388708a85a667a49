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

package syncer

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

func TestBindingCollector(t *testing.T) {
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	node := func(name, cpu, memory string, ready corev1.ConditionStatus) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourcePods: resource.MustParse("110")}}}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}
		}
		return n
	}
	for _, n := range []*corev1.Node{node("a", "2", "4Gi", corev1.ConditionTrue), node("b", "1500m", "2Gi", corev1.ConditionFalse), node("c", "500m", "1Gi", "")} {
		_ = nodes.Add(n)
	}
	// The syncer's cache holds records (transforms.Physical); an informer
	// without the transform, Pods.
	for i, phase := range []corev1.PodPhase{corev1.PodRunning, corev1.PodRunning, corev1.PodFailed, ""} {
		var obj any = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "m", Name: string(rune('a' + i))}, Status: corev1.PodStatus{Phase: phase}}
		if i%2 == 0 {
			obj, _ = transforms.Physical(obj)
		}
		_ = pods.Add(obj)
	}
	registry := prometheus.NewRegistry()
	virtualPods := cache.NewStore(cache.MetaNamespaceKeyFunc)
	for _, name := range []string{"a", "b"} {
		_ = virtualPods.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}})
	}
	registry.MustRegister(newBindingCollector("worker-1", corelisters.NewNodeLister(nodes), pods, virtualPods))
	want := `
# HELP kubeocean_binding_lent_capacity What the binding's virtual nodes offer (their allocatable), summed, by resource: cores for cpu, bytes for memory and storage, a count otherwise.
# TYPE kubeocean_binding_lent_capacity gauge
kubeocean_binding_lent_capacity{binding="worker-1",resource="cpu"} 4
kubeocean_binding_lent_capacity{binding="worker-1",resource="memory"} 7.516192768e+09
kubeocean_binding_lent_capacity{binding="worker-1",resource="pods"} 330
# HELP kubeocean_binding_pods The binding's pods in the physical cluster, by phase.
# TYPE kubeocean_binding_pods gauge
kubeocean_binding_pods{binding="worker-1",phase="Failed"} 1
kubeocean_binding_pods{binding="worker-1",phase="Pending"} 1
kubeocean_binding_pods{binding="worker-1",phase="Running"} 2
kubeocean_binding_pods{binding="worker-1",phase="Succeeded"} 0
# HELP kubeocean_binding_virtual_nodes Virtual nodes of the binding, by their Ready condition (True, False, Unknown).
# TYPE kubeocean_binding_virtual_nodes gauge
kubeocean_binding_virtual_nodes{binding="worker-1",ready="False"} 1
kubeocean_binding_virtual_nodes{binding="worker-1",ready="True"} 1
kubeocean_binding_virtual_nodes{binding="worker-1",ready="Unknown"} 1
# HELP kubeocean_binding_virtual_pods_cached Virtual pods the binding's syncer holds in its cache: those bound to nodes named like its virtual nodes. Pods elsewhere in the virtual cluster are dropped as they arrive.
# TYPE kubeocean_binding_virtual_pods_cached gauge
kubeocean_binding_virtual_pods_cached{binding="worker-1"} 2
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	// A second binding in the same process (in-process mode) registers
	// beside the first.
	if err := registry.Register(newBindingCollector("worker-2", corelisters.NewNodeLister(nodes), pods, virtualPods)); err != nil {
		t.Fatalf("a second binding's collector: %v", err)
	}
}
