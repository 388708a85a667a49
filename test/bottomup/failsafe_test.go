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
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestTimeZoneTypoLeavesNodesAsTheyAre: a lending policy whose time zone
// does not exist (the CRD cannot know which zones exist) is reported
// invalid, and the syncer leaves its virtual node and the pods on it
// exactly as they were, with the node Lease still renewed, until the typo
// is fixed; the fix takes effect at once.
func TestTimeZoneTypoLeavesNodesAsTheyAre(t *testing.T) {
	w := startSyncer(t, "failsafe", "cls-failsafe")
	ctx := t.Context()
	if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode("failsafe-a", "4", "8Gi", map[string]string{"suite": "failsafe"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lender := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "failsafe-lend"},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "failsafe", TimeZone: "Europe/Berlin"},
	}
	if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, lender, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.WaitCPU(t, "failsafe-a", "4")
	vnode := w.VirtualNode("failsafe-a")
	testenv.CreateNamespace(t, w.Virtual, "failsafe")
	waitPodRunning(t, w, "failsafe", "web", vnode)

	// The typo comes with a limit that would halve the node's CPU: frozen,
	// the node keeps what it had.
	w.UpdatePolicy(t, lender.Name, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.TimeZone = "Europe/Berln"
		p.Spec.ResourceLimits = []kubeoceanv1alpha1.ResourceLimit{{Resource: corev1.ResourceCPU, Percent: ptr.To[int32](50)}}
	})
	testenv.WaitFor(t, 30*time.Second, "the policy reports Valid=False", func(ctx context.Context) (bool, error) {
		p, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, lender.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		valid := meta.FindStatusCondition(p.Status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid)
		return p.Status.Phase == kubeoceanv1alpha1.ResourceLeasingPolicyFailed && valid != nil && valid.Status == metav1.ConditionFalse, nil
	})
	waitForBindingEvent(t, w, kubeoceanv1alpha1.EventConfigurationInvalid)

	leaseBefore := leaseRenewTime(t, w, vnode)
	observeUnchanged(t, w, vnode, "failsafe", "web", 20*time.Second)
	if after := leaseRenewTime(t, w, vnode); !after.After(leaseBefore) {
		t.Errorf("the node Lease was not renewed while frozen: %v, then %v", leaseBefore, after)
	}

	w.UpdatePolicy(t, lender.Name, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.TimeZone = "Europe/Berlin" })
	w.WaitCPU(t, "failsafe-a", "2")
}

// observeUnchanged checks, again and again for the whole period, that the
// virtual node keeps its CPU and has no taint of removal or reclaim, and
// that the pod on it stays.
func observeUnchanged(t *testing.T, w *testenv.SyncerWorld, vnode, namespace, pod string, period time.Duration) {
	t.Helper()
	first, err := w.Virtual.CoreV1().Nodes().Get(t.Context(), vnode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantCPU := first.Status.Allocatable[corev1.ResourceCPU]
	checks := 0
	for deadline := time.Now().Add(period); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		checks++
		n, err := w.Virtual.CoreV1().Nodes().Get(t.Context(), vnode, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("check %d: the virtual node: %v", checks, err)
		}
		if cpu := n.Status.Allocatable[corev1.ResourceCPU]; cpu.Cmp(wantCPU) != 0 {
			t.Fatalf("check %d: the frozen node's CPU changed from %s to %s", checks, wantCPU.String(), cpu.String())
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == kubeoceanv1alpha1.TaintVirtualNodeDeleting || taint.Key == kubeoceanv1alpha1.TaintOutOfTimeWindows {
				t.Fatalf("check %d: the frozen node got taint %s", checks, taint.Key)
			}
		}
		p, err := w.Virtual.CoreV1().Pods(namespace).Get(t.Context(), pod, metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("check %d: the pod on the frozen node: %v (deleting: %v)", checks, err, p != nil && p.DeletionTimestamp != nil)
		}
	}
	t.Logf("the node and its pod stayed as they were through %d checks in %v", checks, period)
}

func leaseRenewTime(t *testing.T, w *testenv.SyncerWorld, vnode string) time.Time {
	t.Helper()
	var lease *coordinationv1.Lease
	testenv.WaitFor(t, 30*time.Second, "the node Lease exists", func(ctx context.Context) (bool, error) {
		var err error
		lease, err = w.Virtual.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, vnode, metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime != nil, err
	})
	return lease.Spec.RenewTime.Time
}

// waitForBindingEvent waits for an event with reason on the world's binding.
func waitForBindingEvent(t *testing.T, w *testenv.SyncerWorld, reason string) {
	t.Helper()
	selector := fields.Set{"involvedObject.kind": "ClusterBinding", "involvedObject.name": w.Binding, "reason": reason}.String()
	testenv.WaitFor(t, 30*time.Second, fmt.Sprintf("a %s event on ClusterBinding %s", reason, w.Binding), func(ctx context.Context) (bool, error) {
		list, err := w.Virtual.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(list.Items) > 0, err
	})
}
