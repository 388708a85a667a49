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
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestSelectorMatchingNothingHoldsEveryNode: a binding's node selector
// edited to a valid value that matches no node restarts the syncer with
// the new scope; the node it no longer sees still exists and runs a pod,
// so its removal is a configuration change that waits for the operator:
// the node and its pod stay, and the binding says so (NodeRemovalHeld=True,
// naming the token). Confirming drains it by eviction.
func TestSelectorMatchingNothingHoldsEveryNode(t *testing.T) {
	w := startSyncer(t, "guard-sel", "cls-guard-sel")
	w.LendNode(t, testenv.KwokNode("guard-sel-a", "4", "8Gi", map[string]string{"suite": "guard-sel"}))
	w.WaitCPU(t, "guard-sel-a", "4")
	vnode := w.VirtualNode("guard-sel-a")
	testenv.CreateNamespace(t, w.Virtual, "guard-sel")
	waitPodRunning(t, w, "guard-sel", "web", vnode)

	w.UpdateBinding(t, func(b *kubeoceanv1alpha1.ClusterBinding) {
		b.Spec.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"no-such-suite"}
	})
	if exit := w.WaitSyncerExit(t, 30*time.Second); exit == nil || !strings.Contains(exit.Error(), "restarting") {
		t.Fatalf("the syncer stopped with %v, want a restart for the new node selector", exit)
	}
	w.RunSyncer(t)

	held := waitHeldCondition(t, w)
	waitForBindingEvent(t, w, kubeoceanv1alpha1.ReasonNodeRemovalUnconfirmed)
	observeUnchanged(t, w, vnode, "guard-sel", "web", 15*time.Second)

	token := held.Message[strings.LastIndex(held.Message, "=")+1 : strings.LastIndex(held.Message, " --overwrite")]
	w.UpdateBinding(t, func(b *kubeoceanv1alpha1.ClusterBinding) {
		b.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationConfirmNodeRemoval: token}
	})
	w.WaitNodeGone(t, "guard-sel-a")
}

// TestKubeconfigOfAnotherClusterFreezesEveryNode: the binding is pinned to
// its physical cluster (status.physicalClusterUID, which the manager
// records). When what the syncer reaches is another cluster — simulated by
// moving the pin, which is the same comparison seen from the other side —
// and that cluster has none of the binding's nodes (the lent node leaves
// the selector), the syncer leaves the virtual node and its pod as they
// are and says why on the binding, and a syncer started then refuses to
// run; the real UID back thaws it.
func TestKubeconfigOfAnotherClusterFreezesEveryNode(t *testing.T) {
	w := startSyncer(t, "guard-id", "cls-guard-id")
	ctx := t.Context()
	kubeSystem, err := w.Physical.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setPin(t, w, string(kubeSystem.UID))
	w.LendNode(t, testenv.KwokNode("guard-id-a", "4", "8Gi", map[string]string{"suite": "guard-id"}))
	w.WaitCPU(t, "guard-id-a", "4")
	vnode := w.VirtualNode("guard-id-a")
	testenv.CreateNamespace(t, w.Virtual, "guard-id")
	waitPodRunning(t, w, "guard-id", "web", vnode)

	setPin(t, w, "uid-of-the-cluster-bound-first")
	relabel(t, w, "guard-id-a", "elsewhere")
	waitForBindingEvent(t, w, kubeoceanv1alpha1.ReasonPhysicalClusterChanged)
	observeUnchanged(t, w, vnode, "guard-id", "web", 15*time.Second)

	// A syncer that starts against the other cluster does not start at
	// all: its pod controllers would take every physical pod for lost.
	w.StopSyncer()
	w.RunSyncer(t)
	if exit := w.WaitSyncerExit(t, 30*time.Second); exit == nil || !strings.Contains(exit.Error(), kubeoceanv1alpha1.ReasonPhysicalClusterChanged) {
		t.Fatalf("the syncer started against another cluster stopped with %v, want %s", exit, kubeoceanv1alpha1.ReasonPhysicalClusterChanged)
	}
	observeUnchanged(t, w, vnode, "guard-id", "web", 3*time.Second)

	// Back on the bound cluster, the node is evaluated again: no longer
	// selected and running a pod, it is held for confirmation, not drained.
	setPin(t, w, string(kubeSystem.UID))
	w.RunSyncer(t)
	waitHeldCondition(t, w)
	observeUnchanged(t, w, vnode, "guard-id", "web", 5*time.Second)
}

// setPin writes status.physicalClusterUID as the manager would.
func setPin(t *testing.T, w *testenv.SyncerWorld, uid string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(t.Context(), w.Binding, metav1.GetOptions{})
		if err != nil {
			return err
		}
		b.Status.PhysicalClusterUID = uid
		_, err = w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().UpdateStatus(t.Context(), b, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func relabel(t *testing.T, w *testenv.SyncerWorld, node, suite string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := w.Physical.CoreV1().Nodes().Get(t.Context(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Labels["suite"] = suite
		_, err = w.Physical.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitHeldCondition waits for the binding's NodeRemovalHeld=True and
// returns it.
func waitHeldCondition(t *testing.T, w *testenv.SyncerWorld) metav1.Condition {
	t.Helper()
	var held *metav1.Condition
	testenv.WaitFor(t, 30*time.Second, "the binding reports NodeRemovalHeld=True", func(ctx context.Context) (bool, error) {
		b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		held = meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionNodeRemovalHeld)
		return held != nil && held.Status == metav1.ConditionTrue && held.Reason == kubeoceanv1alpha1.ReasonNodeRemovalUnconfirmed, nil
	})
	return *held
}
