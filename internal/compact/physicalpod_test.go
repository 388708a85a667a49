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
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

// The cache of the binding's physical pods keeps records, and every way the
// controllers read it (lister, indexer, store, indexes, event handlers)
// sees Pods with what the records keep.
func TestPhysicalPodInformerShowsRecordsAsPods(t *testing.T) {
	owner := ownership.Owner{ClusterID: "cls", BindingUID: "binding-uid"}
	physical := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "web-x", UID: "physical-uid",
			Labels: owner.Stamp(map[string]string{"app": "web"}),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: "app", kubeoceanv1alpha1.AnnotationVirtualPodName: "web"}},
		Spec: corev1.PodSpec{NodeName: "worker-1", ActiveDeadlineSeconds: ptr.To[int64](60),
			Containers: []corev1.Container{{Name: "web", Image: "web:1", Args: []string{"--port=80"}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7"},
	}
	client := fake.NewClientset(physical.DeepCopy())
	// The fake's watch shows only what happens once it is open, and the
	// cache reports synced after its list, maybe before its watch: the
	// writes below wait for the watch.
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		once.Do(func() { close(watching) })
		return false, nil, nil
	})
	cluster := informers.NewCluster("physical", client, kubeoceanfake.NewClientset(), 0)
	records := cluster.Kube(informers.Scope{Namespace: "mount", LabelSelector: owner.Selector(), Slim: testTransforms.Physical, SlimName: "physical"}).Core().V1().Pods().Informer()
	pods := PhysicalPods(records)

	byNode := "byNode"
	if err := pods.Informer().AddIndexers(cache.Indexers{byNode: func(obj any) ([]string, error) {
		return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	seen := func(event string, objs ...any) {
		mu.Lock()
		defer mu.Unlock()
		for _, obj := range objs {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if _, ok := obj.(*corev1.Pod); !ok {
				t.Errorf("%s handed a %T", event, obj)
			}
		}
		events = append(events, event)
	}
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen("add", obj) },
		UpdateFunc: func(oldObj, newObj any) { seen("update", oldObj, newObj) },
		DeleteFunc: func(obj any) { seen("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cluster.Start(ctx)
	if err := cluster.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}

	stored, _, _ := records.GetStore().GetByKey("mount/web-x")
	if _, ok := stored.(*PhysicalPod); !ok {
		t.Fatalf("the cache holds a %T, want a record", stored)
	}
	got, err := pods.Lister().Pods("mount").Get("web-x")
	if err != nil {
		t.Fatal(err)
	}
	want := physical.DeepCopy()
	want.Spec.Containers[0].Args = nil // only names and images are kept
	if !reflect.DeepEqual(got.ObjectMeta, want.ObjectMeta) || !reflect.DeepEqual(got.Spec, want.Spec) || !reflect.DeepEqual(got.Status, want.Status) {
		t.Errorf("the lister reads\n%+v\nwant\n%+v", got, want)
	}
	if again, _ := pods.Lister().Pods("mount").Get("web-x"); again != got {
		t.Error("two reads of one record while the first Pod is held made two Pods")
	}
	if listed, err := pods.Lister().List(labels.Everything()); err != nil || len(listed) != 1 || listed[0].Name != "web-x" {
		t.Errorf("the lister lists %v, %v", listed, err)
	}
	for what, read := range map[string]func() ([]any, error){
		"by the added index":     func() ([]any, error) { return pods.Informer().GetIndexer().ByIndex(byNode, "worker-1") },
		"by the namespace index": func() ([]any, error) { return pods.Informer().GetIndexer().ByIndex(cache.NamespaceIndex, "mount") },
		"from the store":         func() ([]any, error) { return pods.Informer().GetStore().List(), nil },
	} {
		objs, err := read()
		if err != nil || len(objs) != 1 {
			t.Errorf("read %s: %v, %v", what, objs, err)
			continue
		}
		if _, ok := objs[0].(*corev1.Pod); !ok {
			t.Errorf("read %s: a %T", what, objs[0])
		}
	}

	<-watching
	updated := physical.DeepCopy()
	updated.Status.Phase = corev1.PodSucceeded
	if _, err := client.CoreV1().Pods("mount").UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Pods("mount").Delete(ctx, "web-x", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := append([]string(nil), events...)
		mu.Unlock()
		if reflect.DeepEqual(got, []string{"add", "update", "delete"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("handler events %v, want add, update, delete", got)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// A tombstone's record becomes a Pod too; anything else stays as is.
	record, _ := testTransforms.Physical(physical.DeepCopy())
	tombstone := asPod(cache.DeletedFinalStateUnknown{Key: "mount/web-x", Obj: record}).(cache.DeletedFinalStateUnknown)
	if pod, ok := tombstone.Obj.(*corev1.Pod); !ok || pod.Name != "web-x" {
		t.Errorf("a tombstone's record reads as %T", tombstone.Obj)
	}
	if secret := (&corev1.Secret{}); asPod(secret) != any(secret) {
		t.Error("asPod changed a Secret")
	}
	original := record.(*PhysicalPod)
	if copied := original.DeepCopyObject().(*PhysicalPod); copied == original || !reflect.DeepEqual(copied.Pod(), original.Pod()) {
		t.Error("DeepCopyObject does not copy the record")
	}
}

// The kubelet API's node stats read the pods on one physical node from the
// cache as it is, records or Pods, without making Pods of the others.
func TestPhysicalPodsOn(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	pod := func(name, node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: name}, Spec: corev1.PodSpec{NodeName: node}}
	}
	record, _ := testTransforms.Physical(pod("a", "worker-1"))
	for _, obj := range []any{record, pod("b", "worker-1"), pod("c", "worker-2")} {
		if err := store.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, obj := range PhysicalPodsOn(store)("worker-1") {
		names = append(names, obj.GetName())
	}
	slices.Sort(names)
	if !reflect.DeepEqual(names, []string{"a", "b"}) {
		t.Errorf("pods on worker-1: %v, want a and b", names)
	}
}
