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

package topdown

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestInUseCopiesStayInStep: the copies of a running pod's ConfigMap stay
// in step against other writers.
//
//   - The virtual ConfigMap is replaced with the user's manifest (as
//     kubectl replace or a GitOps tool does: our label and finalizer gone)
//     and its physical copy deleted at the same time: the object is marked
//     again and the copy comes back within seconds instead of being taken
//     for an orphan.
//   - Another controller labels the copy: its label stays and the syncer
//     writes nothing; a later change of the virtual labels is carried over
//     in exactly one update that keeps their label.
func TestInUseCopiesStayInStep(t *testing.T) {
	w := lendNode(t, "copies", "cls-copies")
	a := runIsolatedApp(t, w, "copies")
	a.waitRunning(t)
	ctx := t.Context()
	copies := w.Physical.CoreV1().ConfigMaps(w.Mount)
	original, err := copies.Get(ctx, a.physicalConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Replaced on the virtual side, deleted on the physical side.
	replaceWithUserManifest(t, w, a.namespace, a.cm)
	if err := copies.Delete(ctx, a.physicalConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	var restored *corev1.ConfigMap
	testenv.WaitFor(t, 10*time.Second, "the deleted copy of the replaced ConfigMap is back", func(ctx context.Context) (bool, error) {
		restored, err = copies.Get(ctx, a.physicalConfigMap, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return restored.UID != original.UID, nil
	})
	t.Logf("copy restored %v after it was deleted", time.Since(deleted).Round(10*time.Millisecond))
	if restored.Data["color"] != "blue" || restored.Labels[kubeoceanv1alpha1.LabelBindingUID] != w.BindingUID(ctx) {
		t.Errorf("restored copy: data %v, labels %v", restored.Data, restored.Labels)
	}
	testenv.WaitFor(t, 10*time.Second, "the replaced virtual ConfigMap is marked again", func(ctx context.Context) (bool, error) {
		cm, err := w.Virtual.CoreV1().ConfigMaps(a.namespace).Get(ctx, a.cm, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(cm.Finalizers, kubeoceanv1alpha1.Finalizer(w.ClusterID)), nil
	})
	// Replaced again, the copy left in place this time: it is not
	// deleted as an orphan.
	replaceWithUserManifest(t, w, a.namespace, a.cm)
	time.Sleep(3 * time.Second)
	if cm, err := copies.Get(ctx, a.physicalConfigMap, metav1.GetOptions{}); err != nil || cm.UID != restored.UID || cm.DeletionTimestamp != nil {
		t.Fatalf("in-use copy of a replaced ConfigMap was deleted or replaced (err %v)", err)
	}
	testenv.WaitFor(t, 10*time.Second, "an event says the marks of the replaced ConfigMap were put back", func(ctx context.Context) (bool, error) {
		events, err := w.Virtual.CoreV1().Events(a.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == kubeoceanv1alpha1.ReasonKubeoceanMarksRestored && e.InvolvedObject.Name == a.cm
		}), nil
	})

	// Another writer labels the copy.
	labelled, err := copies.Get(ctx, a.physicalConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	labelled.Labels["team.example.com/owner"] = "blue"
	if labelled, err = copies.Update(ctx, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updates := watchUpdates(t, w, a.physicalConfigMap, labelled.ResourceVersion)
	time.Sleep(5 * time.Second)
	if n := updates(); n != 0 {
		t.Errorf("the syncer wrote the copy %d times after another writer labelled it; want 0", n)
	}
	got, err := copies.Get(ctx, a.physicalConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["team.example.com/owner"] != "blue" {
		t.Errorf("another writer's label was removed: %v", got.Labels)
	}

	// The virtual labels change: one update, their label kept.
	virtual, err := w.Virtual.CoreV1().ConfigMaps(a.namespace).Get(ctx, a.cm, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	virtual.Labels["tier"] = "front"
	if _, err := w.Virtual.CoreV1().ConfigMaps(a.namespace).Update(ctx, virtual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "the copy carries the new virtual label", func(ctx context.Context) (bool, error) {
		got, err = copies.Get(ctx, a.physicalConfigMap, metav1.GetOptions{})
		return err == nil && got.Labels["tier"] == "front", err
	})
	time.Sleep(3 * time.Second)
	if n := updates(); n != 1 {
		t.Errorf("the syncer wrote the copy %d times for one virtual label change; want 1", n)
	}
	if got.Labels["team.example.com/owner"] != "blue" {
		t.Errorf("another writer's label was removed when ours changed: %v", got.Labels)
	}
}

// replaceWithUserManifest replaces the virtual ConfigMap namespace/name by
// what its user applied: without our labels, annotations and finalizer.
func replaceWithUserManifest(t *testing.T, w *testenv.SyncerWorld, namespace, name string) {
	t.Helper()
	ctx := t.Context()
	for {
		cm, err := w.Virtual.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k := range cm.Labels {
			if strings.HasPrefix(k, "kubeocean.io/") {
				delete(cm.Labels, k)
			}
		}
		for k := range cm.Annotations {
			if strings.HasPrefix(k, "kubeocean.io/") {
				delete(cm.Annotations, k)
			}
		}
		cm.Finalizers = nil
		_, err = w.Virtual.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
}

// watchUpdates counts the updates of the physical ConfigMap name after
// resourceVersion; the returned function reads the count.
func watchUpdates(t *testing.T, w *testenv.SyncerWorld, name, resourceVersion string) func() int {
	t.Helper()
	watcher, err := w.Physical.CoreV1().ConfigMaps(w.Mount).Watch(t.Context(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + name, ResourceVersion: resourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Stop)
	count := make(chan int, 1)
	count <- 0
	go func() {
		for event := range watcher.ResultChan() {
			if event.Type == watch.Modified {
				count <- <-count + 1
			}
		}
	}()
	return func() int {
		n := <-count
		count <- n
		return n
	}
}
