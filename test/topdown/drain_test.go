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

package topdown

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubeocean/kubeocean/test/testenv"
)

// readyPods counts the pods of app that are Ready and not terminating:
// those a PodDisruptionBudget counts as healthy.
func readyPods(ctx context.Context, w *testenv.SyncerWorld, ns, app string) (int, error) {
	list, err := w.Virtual.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, nil
}

// TestDrainRespectsPodDisruptionBudget: three pods of a Deployment run on
// one virtual node, with a PodDisruptionBudget of maxUnavailable 1 and a
// second virtual node to move to. The first node leaves the binding's
// selector, so it is drained: its pods leave one at a time, never two down
// at once, and the node goes once they all run on the other.
func TestDrainRespectsPodDisruptionBudget(t *testing.T) {
	w := lendNode(t, "pdb", "cls-pdb")
	ctx := t.Context()
	ns := "pdb"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)

	labels := map[string]string{"app": "web"}
	template := workload(ns, "", "cls-pdb", nil)
	template.Labels = labels
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: template.ObjectMeta, Spec: template.Spec},
		},
	}
	if _, err := w.Virtual.AppsV1().Deployments(ns).Create(ctx, deployment, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	budget := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
		},
	}
	if _, err := w.Virtual.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, budget, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 90*time.Second, "three pods Ready on the first node", func(ctx context.Context) (bool, error) {
		n, err := readyPods(ctx, w, ns, "web")
		if err != nil {
			return false, err
		}
		return n == 3, fmt.Errorf("%d ready", n)
	})

	// Somewhere to move to.
	second := testenv.KwokNode("pdb-node-2", "64", "256Gi", map[string]string{"suite": "pdb"})
	if _, err := w.Physical.CoreV1().Nodes().Create(ctx, second, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.WaitCPU(t, "pdb-node-2", "64")
	testenv.WaitFor(t, 30*time.Second, "the budget allows one disruption", func(ctx context.Context) (bool, error) {
		b, err := w.Virtual.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return b.Status.DisruptionsAllowed == 1 && b.Status.CurrentHealthy == 3, fmt.Errorf("status %+v", b.Status)
	})

	// Watch how many are up while the first node is drained.
	watchCtx, stopWatching := context.WithCancel(ctx)
	var mu sync.Mutex
	lowest := 3
	var watched sync.WaitGroup
	watched.Go(func() {
		for watchCtx.Err() == nil {
			if n, err := readyPods(watchCtx, w, ns, "web"); err == nil {
				mu.Lock()
				lowest = min(lowest, n)
				mu.Unlock()
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if _, err := w.Physical.CoreV1().Nodes().Patch(ctx, "pdb-node", types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"suite":"elsewhere"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// The node runs pods: the configuration change removes it once the
	// operator confirms.
	w.ConfirmNodeRemoval(t, "")
	start := time.Now()
	testenv.WaitFor(t, 3*time.Minute, "the drained node is removed", func(ctx context.Context) (bool, error) {
		_, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode("pdb-node"), metav1.GetOptions{})
		return err != nil, nil
	})
	testenv.WaitFor(t, 60*time.Second, "three pods Ready on the second node", func(ctx context.Context) (bool, error) {
		n, err := readyPods(ctx, w, ns, "web")
		if err != nil {
			return false, err
		}
		return n == 3, fmt.Errorf("%d ready", n)
	})
	stopWatching()
	watched.Wait()
	t.Logf("drain took %v; fewest pods Ready during it: %d", time.Since(start).Round(time.Second), lowest)
	if lowest < 2 {
		t.Errorf("%d of 3 pods were Ready at one point; the budget allows one down", lowest)
	}
	list, err := w.Virtual.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range list.Items {
		if p.Spec.NodeName != w.VirtualNode("pdb-node-2") {
			t.Errorf("pod %s on %q, want the second node", p.Name, p.Spec.NodeName)
		}
	}
}
