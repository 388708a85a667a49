package pvc

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/naming"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

const grace = time.Minute

var (
	key       = cache.ObjectName{Namespace: dependentstest.Namespace, Name: "data"}
	claimCopy = naming.PhysicalName(dependentstest.Namespace, "data")
)

// newFixture copies the claim data, mounted by the pod web, and builds the
// controller.
func newFixture(t *testing.T) (*dependentstest.Env, *Controller, *corev1.Pod) {
	t.Helper()
	claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
	pod := dependentstest.Pod("web", nil, nil, []string{"data"})
	e := dependentstest.New(t, []runtime.Object{claim, pv, pod}, nil)
	v, p := e.VirtualInformers.Core().V1(), e.PhysicalInformers.Core().V1()
	c, err := New(Options{
		ClusterID: dependentstest.ClusterID, MountNamespace: dependentstest.MountNamespace, Syncer: e.Syncer,
		VirtualPVCs: v.PersistentVolumeClaims(), PhysicalPVCs: p.PersistentVolumeClaims(),
		VirtualPods: v.Pods(), VirtualNodes: v.Nodes(),
		GracePeriod: grace, Clock: e.Clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Syncer.EnsurePVC(e.Context(), dependentstest.Namespace, "data"); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	return e, c, pod
}

func reconcile(t *testing.T, e *dependentstest.Env, c *Controller) time.Duration {
	t.Helper()
	result, err := c.Reconcile(e.Context(), key)
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return result.RequeueAfter
}

func TestResizeReachesCopy(t *testing.T) {
	e, c, _ := newFixture(t)
	reconcile(t, e, c)
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
	reconcile(t, e, c)
	e.ExpectWrites("physical update persistentvolumeclaims mount/" + claimCopy)
	e.SyncCaches()
	reconcile(t, e, c)
	e.ExpectWrites()
}

func TestCollectedWhenLastPodGoes(t *testing.T) {
	e, c, pod := newFixture(t)
	e.DeletePod(pod)
	if wait := reconcile(t, e, c); wait != grace {
		t.Errorf("requeue after %v, want %v", wait, grace)
	}
	e.ExpectWrites()
	e.Clock.Step(grace)
	reconcile(t, e, c)
	e.ExpectWrites("physical delete persistentvolumeclaims mount/"+claimCopy, "virtual update persistentvolumeclaims app/data")
	e.SyncCaches()
	reconcile(t, e, c)
	e.ExpectWrites()
}

func TestRestoresDeletedCopy(t *testing.T) {
	e, c, _ := newFixture(t)
	if err := e.Physical.CoreV1().PersistentVolumeClaims(dependentstest.MountNamespace).Delete(context.Background(), claimCopy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	reconcile(t, e, c)
	e.ExpectWrites("physical create persistentvolumeclaims mount/" + claimCopy)
}
