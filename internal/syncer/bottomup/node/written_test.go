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
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

// syncUnseen reconciles key without feeding the result back into the
// virtual node lister: the informer has not caught up yet.
func (f *fixture) syncUnseen(key string) {
	f.t.Helper()
	f.virtual.ClearActions()
	if _, err := f.c.sync(context.Background(), key); err != nil {
		f.t.Fatalf("sync(%s): %v", key, err)
	}
}

func wantCPU(t *testing.T, f *fixture, want string) {
	t.Helper()
	if got := f.virtualNode(vnode).Status.Allocatable.Cpu(); got.Cmp(resource.MustParse(want)) != 0 {
		t.Fatalf("allocatable cpu = %v, want %s", got, want)
	}
}

func TestStatusWritesOfANodeAreAtLeastAnIntervalApart(t *testing.T) {
	f := newFixture(t)
	f.c.writes.interval = time.Second
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")
	wantCPU(t, f, "8")

	// Two changes within the interval of the create: no write, and a
	// requeue at the interval's end.
	fixtures.MustAdd(f.t, f.foreignPods, foreignPod("a", "node-a", "1", corev1.PodRunning))
	result := f.sync("node-a")
	wantWrites(t, f)
	if result.RequeueAfter <= 0 || result.RequeueAfter > time.Second {
		t.Fatalf("requeue after %v, want within the interval", result.RequeueAfter)
	}
	f.clock.Step(400 * time.Millisecond)
	fixtures.MustAdd(f.t, f.foreignPods, foreignPod("b", "node-a", "2", corev1.PodRunning))
	result = f.sync("node-a")
	wantWrites(t, f)
	if result.RequeueAfter != 600*time.Millisecond {
		t.Fatalf("requeue after %v, want the 600ms left of the interval", result.RequeueAfter)
	}

	// At the end of the interval: one write with the latest figure.
	f.clock.Step(600 * time.Millisecond)
	f.sync("node-a")
	wantWrites(t, f, "patch nodes/status")
	wantCPU(t, f, "5")

	// A change that needs no status write is not held back by the pacing,
	// and a metadata change is made at once.
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"zone": "z1"}))
	f.sync("node-a")
	wantWrites(t, f, "update nodes")
}

func TestWritesAgainstTheVersionItWroteWhileTheInformerIsBehind(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))

	// The informer has not seen the created node: no second create.
	f.syncUnseen("node-a")
	wantWrites(t, f, "create nodes")
	fixtures.MustAdd(f.t, f.foreignPods, foreignPod("a", "node-a", "1", corev1.PodRunning))
	f.syncUnseen("node-a")
	wantWrites(t, f, "patch nodes/status")
	wantCPU(t, f, "7")

	// A status write, then a metadata write, the informer still at the
	// version before both: the metadata update is made against the version
	// the status write returned, which the API server would otherwise
	// refuse with 409 Conflict.
	f.refreshVirtualNodes()
	listed := f.virtualNode(vnode).ResourceVersion
	fixtures.MustAdd(f.t, f.foreignPods, foreignPod("b", "node-a", "2", corev1.PodRunning))
	f.syncUnseen("node-a")
	wantWrites(t, f, "patch nodes/status")
	wantCPU(t, f, "5")
	var sentVersion string
	f.virtual.PrependReactor("update", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		sentVersion = action.(k8stesting.UpdateAction).GetObject().(*corev1.Node).ResourceVersion
		return false, nil, nil
	})
	latest := f.virtualNode(vnode).ResourceVersion
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"zone": "z1"}))
	f.syncUnseen("node-a")
	wantWrites(t, f, "update nodes")
	if sentVersion != latest || sentVersion == listed {
		t.Fatalf("metadata written against version %q, want the latest written %q (the informer holds %q)", sentVersion, latest, listed)
	}
	if got := f.virtualNode(vnode); got.Labels["zone"] != "z1" || got.Status.Allocatable.Cpu().Cmp(resource.MustParse("5")) != 0 {
		t.Fatalf("node after both writes: labels %v, cpu %v", got.Labels, got.Status.Allocatable.Cpu())
	}

	// Once the informer shows it, nothing is remembered any more.
	f.refreshVirtualNodes()
	f.sync("node-a")
	wantWrites(t, f)
	if len(f.c.writes.written) != 0 {
		t.Fatalf("remembered writes of %d nodes after the informer caught up", len(f.c.writes.written))
	}
}

func TestAnotherWritersVersionIsTrusted(t *testing.T) {
	w := newWrites(time.Second)
	node := func(version string) *corev1.Node {
		n := &corev1.Node{}
		n.ResourceVersion = version
		return n
	}
	w.wrote("n", "1", node("2"))
	if got := w.latest("n", node("1")); got.ResourceVersion != "2" {
		t.Fatalf("informer behind: got version %s, want 2", got.ResourceVersion)
	}
	if got := w.latest("n", node("5")); got.ResourceVersion != "5" {
		t.Fatalf("another writer's newer version: got %s, want 5", got.ResourceVersion)
	}
	if _, ok := w.written["n"]; ok {
		t.Fatal("the written object is still remembered after the informer moved past it")
	}

	w.wrote("n", "", node("7"))
	if got := w.latest("n", nil); got == nil || got.ResourceVersion != "7" {
		t.Fatalf("a created node the informer has not seen: got %v, want version 7", got)
	}
	w.forget("n")
	if got := w.latest("n", nil); got != nil {
		t.Fatalf("a forgotten node: got %v, want nil", got)
	}
}
