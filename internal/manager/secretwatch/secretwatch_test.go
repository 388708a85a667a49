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

package secretwatch

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

func secret(namespace, name, kubeconfig string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Data: map[string][]byte{"kubeconfig": []byte(kubeconfig)},
	}
}

// recorder records the keys of the Secret events and of the syncs.
type recorder struct {
	mu            sync.Mutex
	events, syncs []string
}

func (r *recorder) handler() cache.ResourceEventHandler {
	add := func(what string, obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		s := obj.(*corev1.Secret)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, what+" "+s.Namespace+"/"+s.Name)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { add("add", obj) },
		UpdateFunc: func(_, obj any) { add("update", obj) },
		DeleteFunc: func(obj any) { add("delete", obj) },
	}
}

func (r *recorder) synced(key cache.ObjectName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.syncs = append(r.syncs, key.String())
}

func (r *recorder) has(list *[]string, want string) func() bool {
	return func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Contains(*list, want)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWatchesCacheOnlyTheSecretsNamed(t *testing.T) {
	client := kubefake.NewClientset(secret("ns", "a", "config-a"), secret("ns", "unrelated", "x"), secret("other", "b", "config-b"))
	w := New(client)
	var rec recorder
	if err := w.AddEventHandler(rec.handler(), rec.synced); err != nil {
		t.Fatal(err)
	}
	a, missing := cache.ObjectName{Namespace: "ns", Name: "a"}, cache.ObjectName{Namespace: "ns", Name: "missing"}
	w.Watch([]cache.ObjectName{a, missing, {Namespace: "ns"}})
	if w.Len() != 2 {
		t.Fatalf("watching %d Secrets, want 2 (a key without a name is none)", w.Len())
	}
	if _, err := w.Get("ns", "a"); err == nil || apierrors.IsNotFound(err) {
		t.Fatalf("Get before Run = %v, want an error that is not NotFound", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	eventually(t, "both watches synced", func() bool { return w.Synced(a) && w.Synced(missing) })
	eventually(t, "the sync of the missing Secret reported", rec.has(&rec.syncs, "ns/missing"))

	got, err := w.Get("ns", "a")
	if err != nil || string(got.Data["kubeconfig"]) != "config-a" || got.ManagedFields != nil {
		t.Fatalf("Get(ns/a) = %v, %v; want it without managedFields", got, err)
	}
	if _, err := w.Get("ns", "missing"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get(ns/missing) = %v, want NotFound", err)
	}
	if _, err := w.Get("ns", "unrelated"); err == nil || apierrors.IsNotFound(err) {
		t.Fatalf("Get(ns/unrelated) = %v, want not watched", err)
	}

	// Each watch asks the apiserver for its Secret alone.
	var selectors []string
	for _, action := range client.Actions() {
		if action.GetResource().Resource != "secrets" {
			continue
		}
		switch a := action.(type) {
		case clienttesting.ListActionImpl:
			selectors = append(selectors, "list "+a.Namespace+" "+a.ListRestrictions.Fields.String())
		case clienttesting.WatchActionImpl:
			selectors = append(selectors, "watch "+a.Namespace+" "+a.WatchRestrictions.Fields.String())
		default:
			t.Errorf("unexpected %s of secrets", action.GetVerb())
		}
	}
	slices.Sort(selectors)
	want := []string{"list ns metadata.name=a", "list ns metadata.name=missing", "watch ns metadata.name=a", "watch ns metadata.name=missing"}
	if !slices.Equal(selectors, want) {
		t.Fatalf("requests %v, want %v", selectors, want)
	}

	// A change reaches the handlers; a Secret no longer named leaves the
	// cache, one newly named comes.
	updated := secret("ns", "a", "config-a2")
	if _, err := client.CoreV1().Secrets("ns").Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the update of ns/a", rec.has(&rec.events, "update ns/a"))

	b := cache.ObjectName{Namespace: "other", Name: "b"}
	w.Watch([]cache.ObjectName{b})
	if w.Synced(a) || w.Len() != 1 {
		t.Fatalf("ns/a still watched (%d watches)", w.Len())
	}
	if _, err := w.Get("ns", "a"); err == nil || apierrors.IsNotFound(err) {
		t.Fatalf("Get(ns/a) after its watch stopped = %v, want not watched", err)
	}
	eventually(t, "other/b synced", func() bool { return w.Synced(b) })
	eventually(t, "the add of other/b", rec.has(&rec.events, "add other/b"))
	if got, err := w.Get("other", "b"); err != nil || string(got.Data["kubeconfig"]) != "config-b" {
		t.Fatalf("Get(other/b) = %v, %v", got, err)
	}
}
