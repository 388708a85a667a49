package bottomup

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/pkg/syncer"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestPhysicalOutage freezes the physical apiserver of a running syncer for
// longer than the node Lease: the Lease is no longer renewed (as by a syncer
// restarted during the outage, which cannot read the physical cluster), so
// the virtual node goes Unknown like a partitioned kubelet's, and nothing is
// deleted on either side. Once the apiserver answers again the Lease is
// renewed within seconds, and a pod created in the virtual cluster during
// the outage runs.
func TestPhysicalOutage(t *testing.T) {
	t.Parallel()
	// A physical cluster of its own: the other tests of the package share
	// the other one and must not see it frozen.
	physical := controlplane.StartT(t, controlplane.Options{Name: "outage", Kwok: true})
	if err := testenv.InstallCRDs(t.Context(), physical.Config()); err != nil {
		t.Fatal(err)
	}
	w := testenv.StartSyncer(t, virtualCluster, physical, "outage", "cls-outage",
		syncer.Options{Workers: 2, PhysicalQPS: 50, PhysicalBurst: 100})
	ctx := t.Context()
	w.LendNode(t, testenv.KwokNode("outage-a", "4", "8Gi", map[string]string{"suite": "outage"}))
	w.WaitCPU(t, "outage-a", "4")
	vnode := w.VirtualNode("outage-a")
	testenv.CreateNamespace(t, w.Virtual, "outage")
	waitPodRunning(t, w, "outage", "before", vnode)

	resume, err := physical.PauseAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Cleanup(resume)
	// A pod placed during the outage waits for the physical cluster.
	if _, err := w.Virtual.CoreV1().Pods("outage").Create(ctx, virtualPodOn("outage", "during", vnode), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Watch for longer than the node monitor's grace period after the last
	// renewal: renewals stop within two probe periods, the node goes
	// Unknown, and the pod stays.
	var lastRenewal time.Time
	unknownAfter := time.Duration(0)
	for unknownAfter == 0 && time.Since(paused) < nodeMonitorGracePeriod+45*time.Second {
		renewal := leaseRenewTime(t, w, vnode)
		if renewal.After(paused.Add(15 * time.Second)) {
			t.Fatalf("lease renewed at %v, %v into an outage of the physical apiserver", renewal, renewal.Sub(paused).Round(time.Second))
		}
		lastRenewal = renewal
		if unknownAfter == 0 && virtualNodeReady(t, w, vnode) == corev1.ConditionUnknown {
			unknownAfter = time.Since(paused)
		}
		if _, err := w.Virtual.CoreV1().Pods("outage").Get(ctx, "before", metav1.GetOptions{}); err != nil {
			t.Fatalf("virtual pod during the outage: %v", err)
		}
		time.Sleep(2 * time.Second)
	}
	if unknownAfter == 0 {
		t.Fatalf("virtual node %s stayed Ready through %v of physical outage", vnode, time.Since(paused).Round(time.Second))
	}
	t.Logf("last renewal %v into the outage; virtual node Unknown %v into it",
		lastRenewal.Sub(paused).Round(time.Second), unknownAfter.Round(time.Second))

	resume()
	resumed := time.Now()
	testenv.WaitFor(t, 15*time.Second, "the lease is renewed once the physical apiserver answers", func(context.Context) (bool, error) {
		return leaseRenewTime(t, w, vnode).After(lastRenewal), nil
	})
	t.Logf("lease renewed %v after the physical apiserver answered again", time.Since(resumed).Round(100*time.Millisecond))
	testenv.WaitFor(t, 30*time.Second, "the pod placed during the outage runs", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods("outage").Get(ctx, "during", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	t.Logf("pod placed during the outage Running %v after the physical apiserver answered again", time.Since(resumed).Round(100*time.Millisecond))
	before, err := w.Virtual.CoreV1().Pods("outage").Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the pod running before the outage: %v", err)
	}
	if before.DeletionTimestamp != nil {
		t.Errorf("the pod running before the outage is being deleted")
	}
}

func virtualNodeReady(t *testing.T, w *testenv.SyncerWorld, name string) corev1.ConditionStatus {
	t.Helper()
	node, err := w.Virtual.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return readyStatus(node)
}
