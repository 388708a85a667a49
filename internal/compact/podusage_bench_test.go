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
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/ownership"
)

// BenchmarkForeignPodCache reports what one foreign pod costs in a cache,
// with pods decoded from protobuf as an informer receives them: shaped like
// the syncer's (usage-summed: PodUsage records keyed by namespace/name, no
// index, summed per node by UsageByNode); with the records indexed by node
// instead of summed (usage-indexed); and as decoded, less managedFields:
// go test ./internal/compact -run - -bench ForeignPodCache
func BenchmarkForeignPodCache(b *testing.B) {
	const pods, nodes = 20000, 1000
	template := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Labels: map[string]string{"app": "batch"}, UID: "0b7c6f2e-5d1a-4f0e-9a51-3c1f0c2d4e5f", ResourceVersion: "123456"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{container("cpu", "100m", "memory", "128Mi")}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	encoded := make([][]byte, pods)
	for i := range encoded {
		p := template.DeepCopy()
		p.Name = fmt.Sprintf("batch-%08d", i)
		p.Spec.NodeName = fmt.Sprintf("node-%04d", i%nodes)
		data, err := p.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
	}
	usage := ForeignPod(ownership.Owner{ClusterID: "bench", BindingUID: "bench-uid"})
	byNode := cache.Indexers{"node": func(obj any) ([]string, error) { return []string{obj.(*PodUsage).NodeName}, nil }}
	for _, tt := range []struct {
		name      string
		transform cache.TransformFunc
		indexers  cache.Indexers
		sum       bool
	}{
		{"usage-summed", usage, cache.Indexers{}, true},
		{"usage-indexed", usage, byNode, false},
		{"as-decoded", func(obj any) (any, error) { return obj, nil }, cache.Indexers{}, false},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var perPod float64
			for b.Loop() {
				before := heapAlloc()
				store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, tt.indexers)
				sums := NewUsageByNode()
				for _, data := range encoded {
					var p corev1.Pod
					if err := p.Unmarshal(data); err != nil {
						b.Fatal(err)
					}
					cached, _ := tt.transform(&p)
					if err := store.Add(cached); err != nil {
						b.Fatal(err)
					}
					if tt.sum {
						sums.Update(nil, cached.(*PodUsage))
					}
				}
				perPod = float64(heapAlloc()-before) / pods
				runtime.KeepAlive(store)
				runtime.KeepAlive(sums)
			}
			b.ReportMetric(perPod, "B/cached-pod")
		})
	}
}
