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

package pod

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

// A pod waiting for a missing ConfigMap is woken by the ConfigMap's
// arrival, not by its retry backoff; once it waits no more, the ConfigMap's
// changes no longer concern it.
func TestMissingDependencyWakesThePod(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}})
	f.dependents.errs["ConfigMap/config"] = &dependents.NotReadyError{Kind: dependents.KindConfigMap, Namespace: virtualNS, Name: "config", Reason: dependents.ReasonNotFound}
	if _, err := f.reconcile(); err == nil {
		t.Fatal("reconcile of a pod whose ConfigMap is missing succeeded")
	}

	var woken []cache.ObjectName
	handler := f.controller.waiters.handler(dependents.KindConfigMap, func(key cache.ObjectName) { woken = append(woken, key) })
	other := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: virtualNS, Name: "unrelated"}}
	handler.OnAdd(other, false)
	if len(woken) != 0 {
		t.Fatalf("an unrelated ConfigMap woke %v", woken)
	}
	config := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: virtualNS, Name: "config", ResourceVersion: "1"}}
	handler.OnAdd(config, false)
	want := cache.MetaObjectToName(podtest.BoundPod())
	if !slices.Equal(woken, []cache.ObjectName{want}) {
		t.Fatalf("the ConfigMap's arrival woke %v, want %v", woken, want)
	}

	delete(f.dependents.errs, "ConfigMap/config")
	f.mustReconcile()
	woken = nil
	changed := config.DeepCopy()
	changed.ResourceVersion = "2"
	handler.OnUpdate(config, changed)
	if len(woken) != 0 {
		t.Errorf("a pod that waits no more was woken: %v", woken)
	}
}

func TestWaitersForgetAPod(t *testing.T) {
	w := newWaiters()
	pod := cache.ObjectName{Namespace: "a", Name: "p"}
	cm := dependency{kind: dependents.KindConfigMap, namespace: "a", name: "c"}
	secret := dependency{kind: dependents.KindSecret, namespace: "a", name: "s"}
	w.set(pod, []dependency{cm, secret})
	w.set(pod, []dependency{secret})
	if got := w.of(cm); len(got) != 0 {
		t.Errorf("waiters of a dependency the pod no longer waits for: %v", got)
	}
	if got := w.of(secret); !slices.Equal(got, []cache.ObjectName{pod}) {
		t.Errorf("waiters of the Secret = %v, want [%v]", got, pod)
	}
	w.set(pod, nil)
	if len(w.byPod) != 0 || len(w.byDeps) != 0 {
		t.Errorf("entries left after the pod waits no more: %v, %v", w.byPod, w.byDeps)
	}
}
