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

package clusterbinding

import (
	"slices"
	"testing"

	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func secretOf(b *kubeoceanv1alpha1.ClusterBinding) cache.ObjectName {
	return cache.ObjectName{Namespace: b.Spec.SecretRef.Namespace, Name: b.Spec.SecretRef.Name}
}

func TestReconcileWatchesTheReferencedSecretsOnly(t *testing.T) {
	a, b := bound(newBinding("worker-a", "a")), bound(newBinding("worker-b", "b"))
	shared := bound(newBinding("worker-c", "c"))
	shared.Spec.SecretRef = a.Spec.SecretRef
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{a, b, shared}, kubeconfigSecret(a, "config-a"), kubeconfigSecret(b, "config-b"))

	if _, err, _ := f.reconcile(a.Name); err != nil {
		t.Fatal(err)
	}
	if want := []cache.ObjectName{secretOf(a), secretOf(b)}; !slices.Equal(f.watches.watched, want) {
		t.Fatalf("watching %v, want %v", f.watches.watched, want)
	}

	// A Secret still referenced stays watched; one no longer referenced,
	// by a binding gone or pointed elsewhere, is not.
	if err := f.bindings.Delete(a); err != nil {
		t.Fatal(err)
	}
	if _, err, _ := f.reconcile(a.Name); err != nil {
		t.Fatal(err)
	}
	if want := []cache.ObjectName{secretOf(a), secretOf(b)}; !slices.Equal(f.watches.watched, want) {
		t.Fatalf("after worker-a went: watching %v, want %v (worker-c still uses its Secret)", f.watches.watched, want)
	}
	moved := f.cached(b.Name).DeepCopy()
	moved.Spec.SecretRef.Name = "worker-b-kubeconfig-2"
	f.mustUpdate(moved)
	if _, err, _ := f.reconcile(b.Name); err != nil {
		t.Fatal(err)
	}
	if want := []cache.ObjectName{secretOf(a), secretOf(moved)}; !slices.Equal(f.watches.watched, want) {
		t.Fatalf("after worker-b changed its Secret: watching %v, want %v", f.watches.watched, want)
	}
}

func TestReconcileWaitsForTheWatchOfItsSecret(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "config-1"))
	f.watches.unsynced[secretOf(b)] = true

	result, err, actions := f.reconcile(b.Name)
	if err != nil || len(actions) != 0 || f.checker.checks != 0 || result.RequeueAfter != secretWatchWait {
		t.Fatalf("before the watch synced: %v, writes %v, checks %d, requeue %v; want nothing done and a retry",
			err, verbs(actions), f.checker.checks, result.RequeueAfter)
	}
	if phase := f.cached(b.Name).Status.Phase; phase != kubeoceanv1alpha1.ClusterBindingPending {
		t.Fatalf("phase %s, want Pending", phase)
	}

	// The sync brings the binding back at once.
	delete(f.watches.unsynced, secretOf(b))
	f.watches.synced(secretOf(b))
	if f.c.Len() != 1 {
		t.Fatalf("%d keys queued after the sync, want the binding", f.c.Len())
	}
	if _, err, _ := f.reconcile(b.Name); err != nil || f.checker.checks != 1 {
		t.Fatalf("after the sync: %v, checks %d", err, f.checker.checks)
	}
	if phase := f.cached(b.Name).Status.Phase; phase != kubeoceanv1alpha1.ClusterBindingReady {
		t.Errorf("phase %s, want Ready", phase)
	}
}
