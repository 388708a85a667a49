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
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func storeWith(t *testing.T, objs ...*corev1.ConfigMap) cache.SharedIndexInformer {
	t.Helper()
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &corev1.ConfigMap{}, 0, cache.Indexers{})
	for _, obj := range objs {
		if err := informer.GetStore().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return informer
}

// Every period, and not before, the resync enqueues the key of every
// cached virtual object and of every object a cached copy was made for,
// orphans included, each once.
func TestResyncEnqueuesCachedKeysEveryPeriod(t *testing.T) {
	virtual := storeWith(t,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "conf"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "other"}})
	copyOf := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: name + "-x", Annotations: map[string]string{
			kubeoceanv1alpha1.AnnotationVirtualNamespace: "app", kubeoceanv1alpha1.AnnotationVirtualName: name}}}
	}
	physical := storeWith(t, copyOf("conf"), copyOf("orphan"))

	var mu sync.Mutex
	var keys []string
	enqueue := func(key cache.ObjectName) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, key.String())
	}
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(keys))
	}
	clock := clocktesting.NewFakeClock(time.Now())
	r := resyncRunnable(time.Minute, clock, resyncTarget{name: "configmaps", enqueue: enqueue, sources: []resyncSource{
		sourceOf(virtual, controller.ObjectKeys[*corev1.ConfigMap]),
		sourceOf(physical, dependents.CopyKeys[*corev1.ConfigMap](true)),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() { cancel(); <-done }()

	poll := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true,
			func(context.Context) (bool, error) { return cond(), nil }); err != nil {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
	poll("the resync waits on the clock", clock.HasWaiters)
	if k := got(); len(k) != 0 {
		t.Errorf("enqueued %v before the first period", k)
	}
	want := []string{"app/conf", "app/orphan", "app/other"}
	clock.Step(time.Minute)
	poll("the first resync", func() bool { return len(got()) == 3 })
	if k := got(); !slices.Equal(k, want) {
		t.Errorf("enqueued %v, want %v", k, want)
	}
	clock.Step(time.Minute)
	poll("the second resync", func() bool { return len(got()) == 6 })
}
