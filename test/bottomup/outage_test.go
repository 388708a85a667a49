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

package bottomup

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestPhysicalOutage freezes the physical apiserver of a running syncer for
// longer than the virtual node monitor's grace period. The syncer keeps the
// last known good state: it renews the node Lease from the physical node's
// last known state, so the virtual node stays Ready and nothing is evicted
// or deleted on either side, and it says why: the node is tainted
// kubeocean.io/physical-unreachable (NoSchedule). Once the apiserver
// answers again the taint goes, and a pod created in the virtual cluster
// during the outage runs.
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

	// Watch for longer than the node monitor's grace period: the Lease is
	// renewed throughout, the node stays Ready, is tainted, and the pod
	// stays.
	var lastRenewal time.Time
	tainted := false
	for time.Since(paused) < nodeMonitorGracePeriod+15*time.Second {
		lastRenewal = leaseRenewTime(t, w, vnode)
		if status := virtualNodeReady(t, w, vnode); status != corev1.ConditionTrue {
			t.Fatalf("virtual node %s is Ready=%s %v into an outage of the physical apiserver", vnode, status, time.Since(paused).Round(time.Second))
		}
		tainted = tainted || hasTaint(t, w, vnode, kubeoceanv1alpha1.TaintPhysicalUnreachable)
		if p, err := w.Virtual.CoreV1().Pods("outage").Get(ctx, "before", metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("virtual pod during the outage: %v, being deleted %v", err, err == nil && p.DeletionTimestamp != nil)
		}
		time.Sleep(2 * time.Second)
	}
	if lastRenewal.Before(paused.Add(nodeMonitorGracePeriod)) {
		t.Errorf("the lease was last renewed %v into the outage, want renewals throughout", lastRenewal.Sub(paused).Round(time.Second))
	}
	if !tainted {
		t.Errorf("virtual node %s was never tainted %s during the outage", vnode, kubeoceanv1alpha1.TaintPhysicalUnreachable)
	}

	resume()
	resumed := time.Now()
	testenv.WaitFor(t, 15*time.Second, "the outage taint goes once the physical apiserver answers", func(context.Context) (bool, error) {
		return !hasTaint(t, w, vnode, kubeoceanv1alpha1.TaintPhysicalUnreachable), nil
	})
	t.Logf("outage taint removed %v after the physical apiserver answered again", time.Since(resumed).Round(100*time.Millisecond))
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

func hasTaint(t *testing.T, w *testenv.SyncerWorld, name, key string) bool {
	t.Helper()
	node, err := w.Virtual.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == key {
			return true
		}
	}
	return false
}
