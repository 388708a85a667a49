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

package node

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

// drainFixture is a lent node with one running pod, drained by the policy's
// removal, with a drain timeout of five minutes and evictions answered by
// refuse.
func drainFixture(t *testing.T, refuse func() error) (*fixture, *corev1.Pod) {
	f := newFixture(t)
	f.c.drainTimeout = 5 * time.Minute
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", UID: "pod-uid"},
		Spec: corev1.PodSpec{NodeName: vnode}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if _, err := f.virtual.CoreV1().Pods("default").Create(t.Context(), running, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixtures.MustAdd(f.t, f.virtualPods, running)
	f.virtual.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		return true, nil, refuse()
	})
	f.virtual.ClearActions()
	return f, running
}

// A drain of a node whose physical node is gone asks through the eviction
// API while a disruption budget refuses, and deletes the pod once the drain
// timeout has passed since the deletion taint.
func TestDrainEvictsUntilTimeout(t *testing.T) {
	f, _ := drainFixture(t, func() error {
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	})
	f.physicalNodes.(interface{ Delete(any) error }).Delete(physicalNode("node-a", nil))

	result := f.sync("node-a")
	wantWrites(t, f, "update nodes", "create pods/eviction")
	if result.RequeueAfter != drainRecheck {
		t.Fatalf("requeue after %v, want %v", result.RequeueAfter, drainRecheck)
	}
	f.refreshVirtualNodes()
	f.virtual.ClearActions()

	f.clock.Step(4*time.Minute + 55*time.Second)
	result = f.sync("node-a")
	wantWrites(t, f, "create pods/eviction")
	if result.RequeueAfter != 5*time.Second {
		t.Fatalf("requeue after %v, want the 5s left of the drain timeout", result.RequeueAfter)
	}
	f.virtual.ClearActions()

	f.clock.Step(5 * time.Second)
	f.sync("node-a")
	wantWrites(t, f, "delete pods")
	if taint := findTaint(f.virtualNode(vnode).Spec.Taints, kubeoceanv1alpha1.TaintVirtualNodeDeleting); taint == nil || taint.TimeAdded == nil {
		t.Fatalf("deletion taint %+v, want one with its time", taint)
	}
}

// An eviction that passes needs nothing more: the pod goes on its own.
func TestDrainEvictionAccepted(t *testing.T) {
	f, _ := drainFixture(t, func() error { return nil })
	f.physicalNodes.(interface{ Delete(any) error }).Delete(physicalNode("node-a", nil))
	f.sync("node-a")
	wantWrites(t, f, "update nodes", "create pods/eviction")
}

// A physical node being deleted takes its pods with it: no budget can keep
// them, so they are deleted at once.
func TestDrainOfDeletedPhysicalNodeIsForced(t *testing.T) {
	f, _ := drainFixture(t, func() error {
		t.Error("evicted a pod of a physical node being deleted")
		return nil
	})
	deleting := physicalNode("node-a", nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	deleting.Finalizers = []string{"x"}
	fixtures.MustAdd(f.t, f.physicalNodes, deleting)
	f.sync("node-a")
	wantWrites(t, f, "update nodes", "delete pods")
}
