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

package copier

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

var (
	volumeKey  = cache.ObjectName{Name: "pv-data"}
	volumeCopy = dependents.PhysicalPVName("pv-data")
)

// newPVFixture copies the claim data and its volume pv-data and builds the
// controller.
func newPVFixture(t *testing.T) (*dependentstest.Env, *dependents.Controller[*corev1.PersistentVolume]) {
	t.Helper()
	claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
	e := dependentstest.New(t, []runtime.Object{claim, pv}, nil)
	c := newControllers(t, e).PVs
	if _, err := e.Syncer.EnsurePVC(e.Context(), dependentstest.Namespace, "data"); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	return e, c
}

func TestPVKeptWhileClaimIsCopied(t *testing.T) {
	e, c := newPVFixture(t)
	reconcile(t, e, c, volumeKey)
	e.ExpectWrites()
}

func TestPVReleasedAfterItsClaim(t *testing.T) {
	e, c := newPVFixture(t)
	if err := e.Syncer.ReleasePVC(e.Context(), dependentstest.Namespace, "data"); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()

	// The claim's release (it leaves the cache of marked claims) maps to
	// its volume.
	claim, _ := dependentstest.BoundClaim("data", "pv-data", nil)
	if keys := volumeKeys(claim); !slices.Equal(keys, []cache.ObjectName{volumeKey}) {
		t.Errorf("claim event keys %v, want %v", keys, volumeKey)
	}
	if wait := reconcile(t, e, c, volumeKey); wait != grace {
		t.Errorf("requeue after %v, want %v", wait, grace)
	}
	e.Clock.Step(grace)
	reconcile(t, e, c, volumeKey)
	e.ExpectWrites("physical delete persistentvolumes "+volumeCopy, "virtual update persistentvolumes pv-data")
	pv, err := e.Virtual.CoreV1().PersistentVolumes().Get(context.Background(), "pv-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pv.Finalizers) != 0 || len(pv.Labels) != 0 || len(pv.Annotations) != 0 {
		t.Errorf("virtual PV keeps marks: labels %v, annotations %v, finalizers %v", pv.Labels, pv.Annotations, pv.Finalizers)
	}
	e.SyncCaches()
	reconcile(t, e, c, volumeKey)
	e.ExpectWrites()
}

func TestPVRestoresDeletedCopy(t *testing.T) {
	e, c := newPVFixture(t)
	if err := e.Physical.CoreV1().PersistentVolumes().Delete(context.Background(), volumeCopy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	reconcile(t, e, c, volumeKey)
	e.ExpectWrites("physical create persistentvolumes " + volumeCopy)
	copied, err := e.Physical.CoreV1().PersistentVolumes().Get(context.Background(), volumeCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if copied.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("reclaim policy %s", copied.Spec.PersistentVolumeReclaimPolicy)
	}
}

func TestPVDeletedVolumeLosesCopyThenFinalizer(t *testing.T) {
	e, c := newPVFixture(t)
	pv, err := e.Virtual.CoreV1().PersistentVolumes().Get(context.Background(), "pv-data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	pv.DeletionTimestamp = &now
	if _, err := e.Virtual.CoreV1().PersistentVolumes().Update(context.Background(), pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	reconcile(t, e, c, volumeKey)
	e.ExpectWrites("physical delete persistentvolumes "+volumeCopy, "virtual update persistentvolumes pv-data")
}
