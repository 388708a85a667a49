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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

var (
	claimKey  = cache.ObjectName{Namespace: dependentstest.Namespace, Name: "data"}
	claimCopy = kubeoceanv1alpha1.PhysicalName(dependentstest.Namespace, "data")
)

// newPVCFixture copies the claim data, mounted by the pod web, and builds the
// controller.
func newPVCFixture(t *testing.T) (*dependentstest.Env, *dependents.Controller[*corev1.PersistentVolumeClaim], *corev1.Pod) {
	t.Helper()
	claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
	pod := dependentstest.Pod("web", nil, nil, []string{"data"})
	e := dependentstest.New(t, []runtime.Object{claim, pv, pod}, nil)
	c := newControllers(t, e).PVCs
	if _, err := e.Syncer.EnsurePVC(e.Context(), dependentstest.Namespace, "data"); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	return e, c, pod
}

func TestPVCResizeReachesCopy(t *testing.T) {
	e, c, _ := newPVCFixture(t)
	reconcile(t, e, c, claimKey)
	e.ExpectWrites()

	claim, err := e.Virtual.CoreV1().PersistentVolumeClaims(dependentstest.Namespace).Get(context.Background(), "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
	if _, err := e.Virtual.CoreV1().PersistentVolumeClaims(dependentstest.Namespace).Update(context.Background(), claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	reconcile(t, e, c, claimKey)
	e.ExpectWrites("physical update persistentvolumeclaims mount/" + claimCopy)
	e.SyncCaches()
	reconcile(t, e, c, claimKey)
	e.ExpectWrites()
}

func TestPVCCollectedWhenLastPodGoes(t *testing.T) {
	e, c, pod := newPVCFixture(t)
	e.DeletePod(pod)
	if wait := reconcile(t, e, c, claimKey); wait != grace {
		t.Errorf("requeue after %v, want %v", wait, grace)
	}
	e.ExpectWrites()
	e.Clock.Step(grace)
	reconcile(t, e, c, claimKey)
	e.ExpectWrites("physical delete persistentvolumeclaims mount/"+claimCopy, "virtual update persistentvolumeclaims app/data")
	e.SyncCaches()
	reconcile(t, e, c, claimKey)
	e.ExpectWrites()
}

func TestPVCRestoresDeletedCopy(t *testing.T) {
	e, c, _ := newPVCFixture(t)
	if err := e.Physical.CoreV1().PersistentVolumeClaims(dependentstest.MountNamespace).Delete(context.Background(), claimCopy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	reconcile(t, e, c, claimKey)
	e.ExpectWrites("physical create persistentvolumeclaims mount/" + claimCopy)
}
