package podstatus

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
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
	if got, want := verbs(actions), []string{"update pods/status"}; !slices.Equal(got, want) {
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
		if w := append(writes(f.virtualKube.Actions()), f.physicalKube.Actions()...); len(w) != 0 {
			t.Errorf("second reconcile wrote %v", verbs(w))
		}
		if r := f.virtualKube.Actions(); len(r) != 0 {
			t.Errorf("second reconcile read the live cluster: %v", verbs(r))
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
		if got, want := verbs(f.virtualKube.Actions()), []string{"update pods/status"}; !slices.Equal(got, want) {
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
		if got, want := verbs(actions), []string{"update pods/status"}; !slices.Equal(got, want) {
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
		if got, want := verbs(f.virtualKube.Actions()), []string{"update pods/status"}; !slices.Equal(got, want) {
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
