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

package podstatus

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

// TestReconcileSyncsStatusAndUID follows a pod from Pending to Running:
// the first reconcile writes the status and the physical UID in one status
// update, which touches no other metadata; the next one writes nothing.
func TestReconcileSyncsStatusAndUID(t *testing.T) {
	f := newFixture(t, pods(physicalPod()), pods(virtualPod()), pods(virtualPod()))
	if err := f.reconcile(t); err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	actions := f.virtualKube.Actions()
	if got, want := fixtures.Verbs(actions), []string{"update pods/status"}; !slices.Equal(got, want) {
		t.Fatalf("virtual actions = %v, want %v", got, want)
	}
	assertDeleted(t, f.physicalKube.Actions(), false)

	updated := actions[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
	if want := mirroredStatus(virtualPod().Status, physicalPod().Status); !equality.Semantic.DeepEqual(updated.Status, want) {
		t.Errorf("written status = %+v, want %+v", updated.Status, want)
	}
	if updated.Status.Phase != corev1.PodRunning || updated.Status.PodIP == "" || len(updated.Status.ContainerStatuses) != 1 {
		t.Errorf("written status is not the running physical one: %+v", updated.Status)
	}
	wantMeta := virtualPod().ObjectMeta
	wantMeta.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] = string(physicalUID)
	wantMeta.Annotations[kubeoceanv1alpha1.AnnotationLastSyncTime] = "2026-03-04T05:06:07Z"
	if !equality.Semantic.DeepEqual(updated.ObjectMeta, wantMeta) {
		t.Errorf("written metadata = %+v, want %+v (the virtual pod's, UID and resourceVersion included, plus the two annotations)", updated.ObjectMeta, wantMeta)
	}

	// The informer delivers what was written; reconciling again, and
	// again, writes nothing.
	stored, err := f.virtualKube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), virtualNS, virtualName)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdate(t, f, stored.(*corev1.Pod))
	for range 2 {
		f.clearActions()
		if err := f.reconcile(t); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		if w := append(fixtures.Writes(f.virtualKube.Actions()), f.physicalKube.Actions()...); len(w) != 0 {
			t.Errorf("second reconcile wrote %v", fixtures.Verbs(w))
		}
		if r := f.virtualKube.Actions(); len(r) != 0 {
			t.Errorf("second reconcile read the live cluster: %v", fixtures.Verbs(r))
		}
	}
}

func mustUpdate(t *testing.T, f *fixture, virtual *corev1.Pod) {
	t.Helper()
	if err := f.virtualPods.Update(virtual.DeepCopy()); err != nil {
		t.Fatal(err)
	}
}

// TestReconcileWritesOnlyWhatChanged: a status change after the mapping is
// recorded is one status write, with last-sync-time left alone; a stale
// UID annotation alone is one status write too.
func TestReconcileWritesOnlyWhatChanged(t *testing.T) {
	t.Run("status changed", func(t *testing.T) {
		physical := physicalPod()
		physical.Status.ContainerStatuses[0].RestartCount = 1
		f := newFixture(t, pods(physical), pods(syncedVirtualPod()), pods(syncedVirtualPod()))
		if err := f.reconcile(t); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		if got, want := fixtures.Verbs(f.virtualKube.Actions()), []string{"update pods/status"}; !slices.Equal(got, want) {
			t.Errorf("virtual actions = %v, want %v", got, want)
		}
	})
	t.Run("UID annotation stale", func(t *testing.T) {
		virtual := withAnnotation(syncedVirtualPod(), kubeoceanv1alpha1.AnnotationPhysicalPodUID, "earlier-physical-pod")
		f := newFixture(t, pods(physicalPod()), pods(virtual), pods(virtual))
		if err := f.reconcile(t); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		actions := f.virtualKube.Actions()
		if got, want := fixtures.Verbs(actions), []string{"update pods/status"}; !slices.Equal(got, want) {
			t.Fatalf("virtual actions = %v, want %v", got, want)
		}
		written := actions[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
		if got := written.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID]; got != string(physicalUID) {
			t.Errorf("written UID annotation = %q, want %q", got, physicalUID)
		}
	})
	t.Run("virtual pod terminating still gets status", func(t *testing.T) {
		virtual := terminating(virtualPod())
		f := newFixture(t, pods(physicalPod()), pods(virtual), pods(virtual))
		if err := f.reconcile(t); err != nil {
			t.Fatalf("reconcile: %v", err)
		}
		if got, want := fixtures.Verbs(f.virtualKube.Actions()), []string{"update pods/status"}; !slices.Equal(got, want) {
			t.Errorf("virtual actions = %v, want %v", got, want)
		}
		assertDeleted(t, f.physicalKube.Actions(), false)
	})
}

func TestReconcileWriteRaces(t *testing.T) {
	tests := []struct {
		name    string
		verb    string
		err     error
		wantErr bool
	}{
		// A newer virtual pod is on its way through the informer, whose
		// event reconciles the physical pod again.
		{"status conflict", "update", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, virtualName, errors.New("stale")), false},
		{"virtual pod gone during status write", "update", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, virtualName), false},
		{"status write fails", "update", apierrors.NewServiceUnavailable("busy"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, pods(physicalPod()), pods(virtualPod()), pods(virtualPod()))
			f.virtualKube.PrependReactor(tt.verb, "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			if err := f.reconcile(t); (err != nil) != tt.wantErr {
				t.Errorf("reconcile error = %v, want error %v", err, tt.wantErr)
			}
			assertDeleted(t, f.physicalKube.Actions(), false)
		})
	}
}

// TestReconcileWaitsForTheCache: a reconcile that runs ahead of the
// virtual pod cache neither reads live nor writes against a stale
// resourceVersion when it knows why the cache is behind.
func TestReconcileWaitsForTheCache(t *testing.T) {
	expectVirtual := func(t *testing.T, f *fixture, want ...string) {
		t.Helper()
		if got := fixtures.Verbs(f.virtualKube.Actions()); !slices.Equal(got, want) {
			t.Errorf("virtual actions = %v, want %v", got, want)
		}
		f.clearActions()
	}

	t.Run("our last status write", func(t *testing.T) {
		pending := physicalPod()
		pending.Status = pendingStatus()
		f := newFixture(t, pods(pending), pods(virtualPod()), pods(virtualPod()))
		f.reconcileResult(t)
		expectVirtual(t, f, "update pods/status")

		// The physical pod runs before our write reaches the cache: the
		// cache still shows the version the write replaced.
		if err := f.physicalPods.Update(physicalPod()); err != nil {
			t.Fatal(err)
		}
		if result := f.reconcileResult(t); result.RequeueAfter != 0 {
			t.Errorf("RequeueAfter = %v, want 0 (the write's event comes)", result.RequeueAfter)
		}
		expectVirtual(t, f)

		// The write's event: the next reconcile copies the running status.
		stored, err := f.virtualKube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), virtualNS, virtualName)
		if err != nil {
			t.Fatal(err)
		}
		written := stored.(*corev1.Pod).DeepCopy()
		written.ResourceVersion = "11"
		if err := f.virtualKube.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), written, virtualNS); err != nil {
			t.Fatal(err)
		}
		mustUpdate(t, f, written)
		f.reconcileResult(t)
		expectVirtual(t, f, "update pods/status")
		if len(f.controller.lag.replaced) != 1 {
			t.Errorf("remembered writes = %v, want the last one only", f.controller.lag.replaced)
		}
		if err := f.physicalPods.Delete(physicalPod()); err != nil {
			t.Fatal(err)
		}
		f.reconcileResult(t)
		if len(f.controller.lag.replaced) != 0 {
			t.Errorf("a gone physical pod's write is still remembered: %v", f.controller.lag.replaced)
		}
	})

	unmapped := func() *corev1.Pod {
		pod := virtualPod()
		pod.Annotations = nil
		return pod
	}
	t.Run("a pod the virtual pod does not name yet, where the name rule puts it, is its twin", func(t *testing.T) {
		// The top-down side creates the physical pod before anything is
		// written to the virtual pod: the first status write records the
		// mapping with the physical UID.
		byName := physicalPod()
		byName.Name = kubeoceanv1alpha1.PhysicalName(virtualNS, virtualName)
		f := newFixture(t, pods(byName), pods(unmapped()), pods(unmapped()))
		_, ctx := ktesting.NewTestContext(t)
		if _, err := f.controller.reconcile(ctx, cache.ObjectName{Namespace: mountNS, Name: byName.Name}); err != nil {
			t.Fatal(err)
		}
		actions := f.virtualKube.Actions()
		if got := fixtures.Verbs(actions); !slices.Equal(got, []string{"update pods/status"}) {
			t.Fatalf("virtual actions = %v, want one status write", got)
		}
		written := actions[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
		for k, want := range map[string]string{
			kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: mountNS,
			kubeoceanv1alpha1.AnnotationPhysicalPodName:      byName.Name,
			kubeoceanv1alpha1.AnnotationPhysicalPodUID:       string(physicalUID),
		} {
			if got := written.Annotations[k]; got != want {
				t.Errorf("written %s = %q, want %q", k, got, want)
			}
		}
		if written.Status.Phase != corev1.PodRunning {
			t.Errorf("written phase = %q, want the physical pod's status in the same write", written.Status.Phase)
		}
		assertDeleted(t, f.physicalKube.Actions(), false)
	})
	t.Run("a pod elsewhere than the name rule puts it is not the unmapped pod's twin", func(t *testing.T) {
		// It records this virtual pod's UID, but the virtual pod neither
		// names it nor would be created there: confirmed live, then
		// deleted.
		f := newFixture(t, pods(physicalPod()), pods(unmapped()), pods(unmapped()))
		f.reconcileResult(t)
		assertDeleted(t, f.physicalKube.Actions(), true)
		expectVirtual(t, f, "get pods")
	})
}

// TestReconcileRecordsTheUIDWithTheFirstReport: a physical pod nothing was
// reported on yet has only its UID to record; that waits for the first
// report, so both cost one write, and is written alone once the wait ends.
func TestReconcileRecordsTheUIDWithTheFirstReport(t *testing.T) {
	fresh := physicalPod()
	fresh.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	writtenUID := func(t *testing.T, f *fixture) (*corev1.Pod, bool) {
		t.Helper()
		actions := f.virtualKube.Actions()
		if len(actions) == 0 {
			return nil, false
		}
		if got := fixtures.Verbs(actions); !slices.Equal(got, []string{"update pods/status"}) {
			t.Fatalf("virtual actions = %v, want one status write", got)
		}
		pod := actions[0].(clienttesting.UpdateAction).GetObject().(*corev1.Pod)
		return pod, pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] == string(physicalUID)
	}

	t.Run("first report comes", func(t *testing.T) {
		f := newFixture(t, pods(fresh), pods(virtualPod()), pods(virtualPod()))
		if result := f.reconcileResult(t); result.RequeueAfter != unreportedGrace {
			t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, unreportedGrace)
		}
		if _, wrote := writtenUID(t, f); wrote {
			t.Fatal("the UID was written before the first report")
		}
		if err := f.physicalPods.Update(physicalPod()); err != nil {
			t.Fatal(err)
		}
		f.reconcileResult(t)
		pod, wrote := writtenUID(t, f)
		if !wrote || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("want the UID and the running status in one write, got %v", pod)
		}
		if len(f.controller.lag.unreportedSince) != 0 {
			t.Errorf("a reported pod is still awaited: %v", f.controller.lag.unreportedSince)
		}
	})
	t.Run("a report as late as under a burst", func(t *testing.T) {
		// In a 10,000-pod burst with kwok overloaded its first report
		// came 10–24 s (p50) after the pod; the UID still waits for it.
		f := newFixture(t, pods(fresh), pods(virtualPod()), pods(virtualPod()))
		clock := testingclock.NewFakePassiveClock(now)
		f.controller.clock = clock
		f.reconcileResult(t)
		clock.SetTime(now.Add(20 * time.Second))
		if result := f.reconcileResult(t); result.RequeueAfter != unreportedGrace-20*time.Second {
			t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, unreportedGrace-20*time.Second)
		}
		if _, wrote := writtenUID(t, f); wrote {
			t.Fatal("the UID was written alone 20 s after the pod, before its first report")
		}
		if err := f.physicalPods.Update(physicalPod()); err != nil {
			t.Fatal(err)
		}
		f.reconcileResult(t)
		if pod, wrote := writtenUID(t, f); !wrote || pod.Status.Phase != corev1.PodRunning {
			t.Errorf("want the UID and the running status in one write, got %v", pod)
		}
	})
	t.Run("no report within the grace period", func(t *testing.T) {
		f := newFixture(t, pods(fresh), pods(virtualPod()), pods(virtualPod()))
		clock := testingclock.NewFakePassiveClock(now)
		f.controller.clock = clock
		f.reconcileResult(t)
		clock.SetTime(now.Add(unreportedGrace))
		if result := f.reconcileResult(t); result.RequeueAfter != 0 {
			t.Errorf("RequeueAfter = %v, want 0", result.RequeueAfter)
		}
		if pod, wrote := writtenUID(t, f); !wrote || pod.Status.Phase != corev1.PodPending {
			t.Errorf("want the UID written alone, got %v", pod)
		}
	})
}
