package capacity

import (
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/ownership"
)

// BenchmarkForeignPodCache reports what one foreign pod costs in a cache
// shaped like the syncer's (compact form, keyed by namespace/name, no
// index, summed per node), with pods decoded from protobuf as an informer
// receives them: go test ./internal/capacity -run - -bench ForeignPodCache
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
	compactPod := CompactForeignPod(ownership.Owner{ClusterID: "bench", BindingUID: "bench-uid"})
	var perPod float64
	for b.Loop() {
		before := heapInUse()
		store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		sums := NewUsageByNode()
		for _, data := range encoded {
			var p corev1.Pod
			if err := p.Unmarshal(data); err != nil {
				b.Fatal(err)
			}
			compact, _ := compactPod(&p)
			if err := store.Add(compact); err != nil {
				b.Fatal(err)
			}
			sums.Update(nil, compact.(*PodUsage))
		}
		perPod = float64(heapInUse()-before) / pods
		runtime.KeepAlive(store)
		runtime.KeepAlive(sums)
	}
	b.ReportMetric(perPod, "B/cached-pod")
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
