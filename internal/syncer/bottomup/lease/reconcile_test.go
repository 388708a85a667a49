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

package lease

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func TestCreatesLeaseForReadyPhysicalNode(t *testing.T) {
	f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionTrue))

	result, writes, err := f.reconcile(virtualName)
	if err != nil {
		t.Fatal(err)
	}
	if len(writes) != 1 || writes[0].GetVerb() != "create" {
		t.Fatalf("writes = %v, want one create", writes)
	}
	if result.RequeueAfter != DefaultRenewInterval {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, DefaultRenewInterval)
	}
	got := f.lease(virtualName)
	if *got.Spec.HolderIdentity != virtualName || *got.Spec.LeaseDurationSeconds != 40 ||
		!got.Spec.RenewTime.Time.Equal(testStart) || !got.Spec.AcquireTime.Time.Equal(testStart) {
		t.Errorf("unexpected spec %+v", got.Spec)
	}
	wantOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: virtualName, UID: "uid-" + types.UID(virtualName)}
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0] != wantOwner {
		t.Errorf("owner references = %+v, want [%+v]", got.OwnerReferences, wantOwner)
	}
	if !f.c.ownsLease(got) {
		t.Errorf("lease labels %v do not mark it as ours", got.Labels)
	}

	f.syncCache()
	result, writes, err = f.reconcile(virtualName)
	if err != nil || len(writes) != 0 {
		t.Fatalf("second reconcile: err %v, writes %v; want none", err, writes)
	}
	if result.RequeueAfter != DefaultRenewInterval {
		t.Errorf("second RequeueAfter = %v, want %v", result.RequeueAfter, DefaultRenewInterval)
	}
}

func TestRenewsOnlyWhenDue(t *testing.T) {
	f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionTrue),
		ourLease(virtualName, testStart.Add(-4*time.Second)))

	// A restarted syncer finds a fresh lease: no write, back when it is due.
	result, writes, err := f.reconcile(virtualName)
	if err != nil || len(writes) != 0 {
		t.Fatalf("fresh lease: err %v, writes %v; want none", err, writes)
	}
	if result.RequeueAfter != 6*time.Second {
		t.Errorf("RequeueAfter = %v, want 6s", result.RequeueAfter)
	}

	f.clock.Step(6 * time.Second)
	result, writes, err = f.reconcile(virtualName)
	if err != nil || len(writes) != 1 || writes[0].GetVerb() != "update" {
		t.Fatalf("due lease: err %v, writes %v; want one update", err, writes)
	}
	if got := f.lease(virtualName).Spec.RenewTime.Time; !got.Equal(f.clock.Now()) {
		t.Errorf("renewTime = %v, want %v", got, f.clock.Now())
	}
	if !f.lease(virtualName).Spec.AcquireTime.Time.Equal(testStart.Add(-4 * time.Second)) {
		t.Error("renewal moved acquireTime")
	}
	if result.RequeueAfter != DefaultRenewInterval {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, DefaultRenewInterval)
	}

	f.syncCache()
	if _, writes, err = f.reconcile(virtualName); err != nil || len(writes) != 0 {
		t.Fatalf("second reconcile: err %v, writes %v; want none", err, writes)
	}
}

func TestRenewalDue(t *testing.T) {
	c := &Controller{renewInterval: 10 * time.Second}
	tests := []struct {
		name      string
		renewTime *time.Time
		wantDue   bool
		wantWait  time.Duration
	}{
		{name: "no lease", wantDue: true, wantWait: 10 * time.Second},
		{name: "just renewed", renewTime: ptr.To(testStart), wantWait: 10 * time.Second},
		{name: "half way", renewTime: ptr.To(testStart.Add(-5 * time.Second)), wantWait: 5 * time.Second},
		{name: "inside the margin", renewTime: ptr.To(testStart.Add(-9500 * time.Millisecond)), wantDue: true, wantWait: 10 * time.Second},
		{name: "overdue", renewTime: ptr.To(testStart.Add(-time.Minute)), wantDue: true, wantWait: 10 * time.Second},
		{name: "in the future", renewTime: ptr.To(testStart.Add(time.Hour)), wantWait: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lease *coordinationv1.Lease
			if tt.renewTime != nil {
				lease = ourLease("n", *tt.renewTime)
			}
			due, wait := c.renewalDue(lease, testStart)
			if due != tt.wantDue || wait != tt.wantWait {
				t.Errorf("renewalDue = %v, %v; want %v, %v", due, wait, tt.wantDue, tt.wantWait)
			}
		})
	}
}

func TestNoRenewalWithoutReadyPhysicalNode(t *testing.T) {
	deleting := physicalNode("worker-1", corev1.ConditionTrue)
	deleting.DeletionTimestamp = &metav1.Time{Time: testStart}
	tests := []struct {
		name     string
		physical *corev1.Node
		label    string
	}{
		{name: "NotReady", physical: physicalNode("worker-1", corev1.ConditionFalse), label: "worker-1"},
		{name: "Unknown", physical: physicalNode("worker-1", corev1.ConditionUnknown), label: "worker-1"},
		{name: "no Ready condition", physical: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}}, label: "worker-1"},
		{name: "being deleted", physical: deleting, label: "worker-1"},
		{name: "missing", label: "worker-1"},
		{name: "no physical-node-name label", physical: physicalNode("worker-1", corev1.ConditionTrue)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects := []runtime.Object{virtualNode(virtualName, tt.label)}
			if tt.physical != nil {
				objects = append(objects, tt.physical)
			}
			f := newFixture(t, objects...)
			result, writes, err := f.reconcile(virtualName)
			if err != nil || len(writes) != 0 || result.RequeueAfter != 0 {
				t.Fatalf("no lease: result %+v, err %v, writes %v; want nothing", result, err, writes)
			}

			f = newFixture(t, append(objects, ourLease(virtualName, testStart.Add(-time.Minute)))...)
			result, writes, err = f.reconcile(virtualName)
			if err != nil || len(writes) != 0 || result.RequeueAfter != 0 {
				t.Fatalf("expired lease: result %+v, err %v, writes %v; want nothing", result, err, writes)
			}
		})
	}
}

func TestRenewsAtOnceWhenPhysicalNodeReadyAgain(t *testing.T) {
	f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionFalse),
		ourLease(virtualName, testStart.Add(-2*time.Second)))
	if _, writes, err := f.reconcile(virtualName); err != nil || len(writes) != 0 {
		t.Fatalf("NotReady: err %v, writes %v; want none", err, writes)
	}

	f.clock.Step(time.Minute)
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("worker-1", corev1.ConditionTrue))
	result, writes, err := f.reconcile(virtualName)
	if err != nil || len(writes) != 1 || writes[0].GetVerb() != "update" {
		t.Fatalf("Ready again: err %v, writes %v; want one update", err, writes)
	}
	if got := f.lease(virtualName).Spec.RenewTime.Time; !got.Equal(f.clock.Now()) {
		t.Errorf("renewTime = %v, want now %v", got, f.clock.Now())
	}
	if result.RequeueAfter != DefaultRenewInterval {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, DefaultRenewInterval)
	}
}

func TestRepairsMetadataWithoutRenewing(t *testing.T) {
	stale := ourLease(virtualName, testStart.Add(-time.Second))
	stale.OwnerReferences[0].UID = "uid-of-an-earlier-node"
	stale.Labels["team"] = "keep-me"
	stale.Spec.HolderIdentity = ptr.To("someone")
	f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionTrue), stale)

	_, writes, err := f.reconcile(virtualName)
	if err != nil || len(writes) != 1 || writes[0].GetVerb() != "update" {
		t.Fatalf("err %v, writes %v; want one update", err, writes)
	}
	got := f.lease(virtualName)
	if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != "uid-"+types.UID(virtualName) {
		t.Errorf("owner references = %+v, want the current node's UID", got.OwnerReferences)
	}
	if *got.Spec.HolderIdentity != virtualName || got.Labels["team"] != "keep-me" {
		t.Errorf("holder %q, labels %v", *got.Spec.HolderIdentity, got.Labels)
	}
	if !got.Spec.RenewTime.Time.Equal(testStart.Add(-time.Second)) {
		t.Errorf("a fresh lease was renewed: renewTime %v", got.Spec.RenewTime)
	}
}

func TestDeletesLeaseOfRemovedVirtualNode(t *testing.T) {
	otherBinding := virtualNode(virtualName, "worker-1")
	otherBinding.Labels[kubeoceanv1alpha1.LabelClusterID] = "other"
	for name, objects := range map[string][]runtime.Object{
		"node gone":                  {physicalNode("worker-1", corev1.ConditionTrue)},
		"node of another binding":    {otherBinding},
		"physical node gone as well": nil,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, append(objects, ourLease(virtualName, testStart))...)
			_, writes, err := f.reconcile(virtualName)
			if err != nil || len(writes) != 1 {
				t.Fatalf("err %v, writes %v; want one delete", err, writes)
			}
			del, ok := writes[0].(clienttesting.DeleteActionImpl)
			if !ok || del.GetName() != virtualName || del.DeleteOptions.Preconditions == nil ||
				*del.DeleteOptions.Preconditions.UID != "lease-uid" {
				t.Fatalf("write %+v is not a delete of %s with a UID precondition", writes[0], virtualName)
			}
		})
	}
}

func TestForeignLeasesAreUntouched(t *testing.T) {
	t.Run("virtual node gone", func(t *testing.T) {
		f := newFixture(t, foreignLease(virtualName))
		if _, writes, err := f.reconcile(virtualName); err != nil || len(writes) != 0 {
			t.Fatalf("err %v, writes %v; want none", err, writes)
		}
	})
	t.Run("in the cache", func(t *testing.T) {
		f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionTrue),
			foreignLease(virtualName))
		_, writes, err := f.reconcile(virtualName)
		if !controller.IsTerminal(err) || len(writes) != 0 {
			t.Fatalf("err %v, writes %v; want a terminal error and no write", err, writes)
		}
	})
	t.Run("hidden by the scoped cache", func(t *testing.T) {
		f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionTrue))
		if err := f.client.Tracker().Add(foreignLease(virtualName)); err != nil {
			t.Fatal(err)
		}
		_, writes, err := f.reconcile(virtualName)
		if !controller.IsTerminal(err) {
			t.Fatalf("err %v; want a terminal error", err)
		}
		if len(writes) != 1 || writes[0].GetVerb() != "create" {
			t.Fatalf("writes %v; want only the rejected create", writes)
		}
		if f.lease(virtualName).Labels != nil {
			t.Error("the foreign lease was changed")
		}
	})
}
