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

package informers

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
)

func podOn(namespace, name, node string) *corev1.Pod {
	p := testPod(namespace, name, nil)
	p.Spec.NodeName = node
	return p
}

func onVnodes(p *corev1.Pod) bool { return strings.HasPrefix(p.Spec.NodeName, "vnode-a-") }

// handlerLog records what an informer's handler saw, by event and pod name.
type handlerLog struct {
	mu     sync.Mutex
	events []string
}

func (l *handlerLog) add(what string, obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, what+" "+obj.(*corev1.Pod).Name)
}

func (l *handlerLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

func (l *handlerLog) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { l.add("add", obj) },
		UpdateFunc: func(_, obj any) { l.add("update", obj) },
		DeleteFunc: func(obj any) { l.add("delete", obj) },
	}
}

func TestKeepPodStoresOnlyKeptPods(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewClientset(
		podOn("apps", "ours", "vnode-a-node-1"),
		podOn("apps", "elsewhere", "worker-1"),
		podOn("apps", "other-binding", "vnode-b-node-1"),
		podOn("apps", "pending", ""),
	)
	c := NewCluster("virtual", kube, kubeoceanfake.NewClientset(), 0)
	scope := Scope{KeepPod: onVnodes, KeepPodName: "vnode-a"}
	pods := c.Kube(scope).Core().V1().Pods()
	if c.Kube(scope) == c.Kube(Scope{}) {
		t.Fatal("a filtering scope must not share the factory of the unfiltered one")
	}
	if _, ok := pods.Informer().GetIndexer().GetIndexers()[cache.NamespaceIndex]; !ok {
		t.Fatal("the filtered pod informer lost the namespace index")
	}
	var log handlerLog
	if _, err := pods.Informer().AddEventHandler(log.handler()); err != nil {
		t.Fatal(err)
	}
	startCluster(t, c)

	if keys := pods.Informer().GetStore().ListKeys(); len(keys) != 1 || keys[0] != "apps/ours" {
		t.Fatalf("stored %v, want only apps/ours", keys)
	}
	if got, err := pods.Lister().Pods("apps").Get("ours"); err != nil || got.ManagedFields != nil || got.Annotations["large"] == "" {
		t.Fatalf("apps/ours: %v, %v; want it whole but for managedFields", got, err)
	}

	// Unrelated pods change and go unseen; a pending pod bound to a kept
	// node arrives, as an add, whole.
	for _, name := range []string{"elsewhere", "other-binding"} {
		p := podOn("apps", name, "")
		p.Labels = map[string]string{"changed": "yes"}
		p.Spec.NodeName = map[string]string{"elsewhere": "worker-1", "other-binding": "vnode-b-node-1"}[name]
		if _, err := kube.CoreV1().Pods("apps").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := kube.CoreV1().Pods("apps").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := kube.CoreV1().Pods("apps").Create(ctx, podOn("apps", "created-elsewhere", "worker-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods("apps").Create(ctx, podOn("apps", "created-ours", "vnode-a-node-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods("apps").Update(ctx, podOn("apps", "pending", "vnode-a-node-1"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kube.CoreV1().Pods("apps").Delete(ctx, "ours", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	want := []string{"add ours", "add created-ours", "add pending", "delete ours"}
	deadline := time.Now().Add(5 * time.Second)
	for len(log.get()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for an event that should not come
	if got := log.get(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("handler saw %v, want %v", got, want)
	}
	keys := pods.Informer().GetStore().ListKeys()
	if len(keys) != 2 || !containsAll(keys, "apps/created-ours", "apps/pending") {
		t.Fatalf("stored %v, want apps/created-ours and apps/pending", keys)
	}
	if got, err := pods.Lister().Pods("apps").Get("pending"); err != nil || got.Spec.Containers[0].Image != "busybox" {
		t.Fatalf("apps/pending once bound: %v, %v; want it whole", got, err)
	}
}

func containsAll(keys []string, want ...string) bool {
	set := map[string]bool{}
	for _, k := range keys {
		set[k] = true
	}
	for _, w := range want {
		if !set[w] {
			return false
		}
	}
	return true
}

func TestKeptWatchPassesWhatIsNotAboutOnePod(t *testing.T) {
	source := watch.NewFake()
	w := FilterWatch(source, keptPods(onVnodes))
	defer w.Stop()
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "42",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	status := &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired}
	go func() {
		source.Add(podOn("apps", "elsewhere", "worker-1"))
		source.Add(podOn("apps", "ours", "vnode-a-n"))
		source.Action(watch.Bookmark, bookmark)
		source.Modify(podOn("apps", "elsewhere", "worker-1"))
		source.Error(status)
		source.Delete(podOn("apps", "elsewhere", "worker-1"))
		source.Delete(podOn("apps", "ours", "vnode-a-n"))
	}()
	var got []string
	for range 4 {
		select {
		case e := <-w.ResultChan():
			name := ""
			if p, ok := e.Object.(*corev1.Pod); ok {
				name = p.Name
			}
			got = append(got, string(e.Type)+" "+name)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %v, then nothing", got)
		}
	}
	if want := "ADDED ours,BOOKMARK ,ERROR ,DELETED ours"; strings.Join(got, ",") != want {
		t.Fatalf("passed %v, want %s", got, want)
	}
}

func TestKeptWatchStopsWithoutAReader(t *testing.T) {
	source := watch.NewFakeWithChanSize(2, false)
	source.Add(podOn("apps", "ours", "vnode-a-n"))
	source.Add(podOn("apps", "ours-too", "vnode-a-n"))
	w := FilterWatch(source, keptPods(onVnodes))
	time.Sleep(20 * time.Millisecond) // the loop now waits to hand over an event
	w.Stop()
	w.Stop()                           // twice is fine
	time.Sleep(200 * time.Millisecond) // the loop, not handed over, ends
	select {
	case e, open := <-w.ResultChan():
		if open {
			t.Fatalf("got %v after Stop; the loop should have ended without a reader", e.Type)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the result channel was not closed after Stop")
	}
}

func TestKeepPodWithoutNamePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a KeepPod without KeepPodName must be refused")
		}
	}()
	NewCluster("x", kubefake.NewClientset(), kubeoceanfake.NewClientset(), 0).Kube(Scope{KeepPod: onVnodes})
}
