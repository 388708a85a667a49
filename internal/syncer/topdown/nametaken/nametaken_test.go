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

package nametaken

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
)

// The condition names the first pods in order, says how many more there
// are, and turns False once none is blocked; only a change asks for a
// write.
func TestCondition(t *testing.T) {
	c := New("worker-1", nil)
	for i := range maxBlockedListed + 2 {
		key := cache.ObjectName{Namespace: "team-a", Name: fmt.Sprintf("web-%d", i)}
		if changed, _ := c.set(key, "physical pod mount/x"); !changed {
			t.Fatalf("a new blocked pod %s asks for no write", key)
		}
	}
	if changed, check := c.set(cache.ObjectName{Namespace: "team-a", Name: "web-0"}, "physical pod mount/x"); changed || !check {
		t.Errorf("before the condition was ever written, the same blocker again: changed %v, check %v; want a check only", changed, check)
	}
	c.markSynced()
	if changed, check := c.set(cache.ObjectName{Namespace: "team-a", Name: "web-0"}, "physical pod mount/x"); changed || check {
		t.Errorf("once written, the same blocker again: changed %v, check %v; want neither", changed, check)
	}
	status, reason, message := c.condition()
	if status != metav1.ConditionTrue || reason != kubeoceanv1alpha1.ReasonPhysicalNameTakenByOther ||
		!strings.HasPrefix(message, "7 pods cannot be created") || !strings.Contains(message, "team-a/web-0: physical pod mount/x") ||
		!strings.Contains(message, "and 2 more") || strings.Contains(message, "web-6:") {
		t.Errorf("condition = %s %s %q", status, reason, message)
	}
	for i := range maxBlockedListed + 2 {
		c.set(cache.ObjectName{Namespace: "team-a", Name: fmt.Sprintf("web-%d", i)}, "")
	}
	if status, reason, _ := c.condition(); status != metav1.ConditionFalse || reason != kubeoceanv1alpha1.ReasonNoPhysicalNameTaken {
		t.Errorf("with no pod blocked: %s %s", status, reason)
	}
}

// The pod workers of a burst all Note their pods at once, before the
// condition was ever checked: the binding is read once, not once per
// worker; a pod blocked while that read is under way is still written.
func TestNoteOneWriterAtATime(t *testing.T) {
	client := fake.NewSimpleClientset(&kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}})
	bindings := &heldReads{ClusterBindingInterface: client.KubeoceanV1alpha1().ClusterBindings(),
		firstRead: make(chan struct{}), release: make(chan struct{})}
	c := New("worker-1", bindingsGetter{bindings})
	_, ctx := ktesting.NewTestContext(t)

	first := make(chan struct{})
	go func() {
		defer close(first)
		c.Note(ctx, cache.ObjectName{Namespace: "team-a", Name: "web-0"}, "")
	}()
	<-bindings.firstRead
	var workers sync.WaitGroup
	for i := 1; i <= 50; i++ {
		workers.Go(func() { c.Note(ctx, cache.ObjectName{Namespace: "team-a", Name: fmt.Sprintf("web-%d", i)}, "") })
	}
	waited := make(chan struct{})
	go func() { workers.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		close(bindings.release)
		t.Fatal("the workers wait for the write under way")
	}
	c.Note(ctx, cache.ObjectName{Namespace: "team-a", Name: "blocked"}, "physical pod mount/x")
	close(bindings.release)
	<-first

	if n := bindings.reads.Load(); n != 2 {
		t.Errorf("the binding was read %d times; want 2: the first check, and the write of the pod blocked meanwhile", n)
	}
	got, err := client.KubeoceanV1alpha1().ClusterBindings().Get(ctx, "worker-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	condition := meta.FindStatusCondition(got.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken)
	if condition == nil || condition.Status != metav1.ConditionTrue || !strings.Contains(condition.Message, "team-a/blocked: physical pod mount/x") {
		t.Errorf("condition after the burst: %+v; want True naming team-a/blocked", condition)
	}
}

// heldReads counts the reads of bindings and holds each until release is
// closed, as a loaded API server answers slowly; firstRead is closed when
// the first comes.
type heldReads struct {
	kubeoceanclient.ClusterBindingInterface
	reads              atomic.Int32
	firstRead, release chan struct{}
}

func (h *heldReads) Get(ctx context.Context, name string, opts metav1.GetOptions) (*kubeoceanv1alpha1.ClusterBinding, error) {
	if h.reads.Add(1) == 1 {
		close(h.firstRead)
	}
	<-h.release
	return h.ClusterBindingInterface.Get(ctx, name, opts)
}

type bindingsGetter struct{ bindings *heldReads }

func (g bindingsGetter) ClusterBindings() kubeoceanclient.ClusterBindingInterface { return g.bindings }
