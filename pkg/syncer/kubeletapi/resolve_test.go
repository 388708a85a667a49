package kubeletapi

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Node stats name the virtual pods of the binding's physical pods on the
// physical node, read from the lister or, when the syncer gives one, from
// PhysicalPodsOn: the same pods either way.
func TestVirtualPodsOn(t *testing.T) {
	physical := func(namespace, name, node, virtual string) *corev1.Pod {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: corev1.PodSpec{NodeName: node}}
		if virtual != "" {
			pod.Annotations = map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: "app", kubeoceanv1alpha1.AnnotationVirtualPodName: virtual,
				kubeoceanv1alpha1.AnnotationVirtualPodUID: virtual + "-uid"}
		}
		return pod
	}
	pods := []*corev1.Pod{
		physical(testMount, "web-a", "worker-1", "web-a"),
		physical(testMount, "web-b", "worker-2", "web-b"),
		physical(testMount, "stray", "worker-1", ""),
		physical("elsewhere", "other", "worker-1", "other"),
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := indexer.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]virtualRef{testMount + "/web-a": {Namespace: "app", Name: "web-a", UID: "web-a-uid"}}
	listed := &resolver{physicalPods: corelisters.NewPodLister(indexer), mountNamespace: testMount}
	given := &resolver{mountNamespace: testMount, physicalPodsOn: func(node string) []metav1.Object {
		var on []metav1.Object
		for _, p := range pods {
			if p.Spec.NodeName == node {
				on = append(on, p)
			}
		}
		return on
	}}
	for what, r := range map[string]*resolver{"from the lister": listed, "from PhysicalPodsOn": given} {
		got, err := r.virtualPodsOn("worker-1")
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, %v; want %v", what, got, err, want)
		}
	}
}
