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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestSyncerBottomUp runs the whole bottom-up syncer, as kubeocean-syncer
// runs it, against the real clusters and walks through a binding's life.
func TestSyncerBottomUp(t *testing.T) {
	w := startSyncer(t, "flow", "cls-flow")
	ctx := t.Context()
	suite := map[string]string{"suite": "flow", "pool": "idle"}
	for _, name := range []string{"flow-a", "flow-b"} {
		if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(name, "8", "16Gi", suite), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A node of another binding's selection never gets a twin here.
	if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode("flow-other", "8", "16Gi", map[string]string{"pool": "idle"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "flow-half"},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{
			Cluster: "flow",
			NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"idle"}}}}}},
			ResourceLimits: []kubeoceanv1alpha1.ResourceLimit{{Resource: corev1.ResourceCPU, Percent: ptr.To[int32](50)}},
		},
	}
	if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("virtual nodes appear Ready with the computed capacity", func(t *testing.T) {
		for _, name := range []string{"flow-a", "flow-b"} {
			testenv.WaitFor(t, 60*time.Second, w.VirtualNode(name)+" is Ready", func(ctx context.Context) (bool, error) {
				n, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode(name), metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				for _, c := range n.Status.Conditions {
					if c.Type == corev1.NodeReady {
						return c.Status == corev1.ConditionTrue, fmt.Errorf("Ready=%s", c.Status)
					}
				}
				return false, fmt.Errorf("no Ready condition")
			})
			w.WaitCPU(t, name, "4")
			if w.Taint(t, name, kubeoceanv1alpha1.TaintVirtualNode) == nil {
				t.Errorf("%s has no default taint", w.VirtualNode(name))
			}
		}
		if _, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode("flow-other"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("a node outside the binding's selector got a twin (err %v)", err)
		}
	})

	t.Run("a foreign pod changes capacity", func(t *testing.T) {
		testenv.CreateNamespace(t, w.Physical, "flow-apps")
		pod := testenv.KwokPod("flow-apps", "batch", "flow-a", "2", "1Gi", nil)
		if _, err := w.Physical.CoreV1().Pods("flow-apps").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		w.WaitCPU(t, "flow-a", "3")
		if err := w.Physical.CoreV1().Pods("flow-apps").Delete(ctx, "batch", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		w.WaitCPU(t, "flow-a", "4")
	})

	t.Run("a policy change re-evaluates the nodes", func(t *testing.T) {
		w.UpdatePolicy(t, "flow-half", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
			p.Spec.ResourceLimits[0].Percent = ptr.To[int32](25)
		})
		w.WaitCPU(t, "flow-a", "2")
		w.WaitCPU(t, "flow-b", "2")
	})

	t.Run("outside the time windows the nodes are tainted", func(t *testing.T) {
		now := time.Now().UTC()
		closed := kubeoceanv1alpha1.TimeWindow{Start: now.Add(2 * time.Hour).Format("15:04"), End: now.Add(3 * time.Hour).Format("15:04")}
		w.UpdatePolicy(t, "flow-half", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
			p.Spec.TimeWindows = []kubeoceanv1alpha1.TimeWindow{closed}
			p.Spec.ForceReclaim = true
		})
		testenv.WaitFor(t, 30*time.Second, "the out-of-window taint is NoExecute", func(context.Context) (bool, error) {
			taint := w.Taint(t, "flow-b", kubeoceanv1alpha1.TaintOutOfTimeWindows)
			return taint != nil && taint.Effect == corev1.TaintEffectNoExecute, fmt.Errorf("taint %v", taint)
		})
		w.UpdatePolicy(t, "flow-half", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.TimeWindows = nil })
		testenv.WaitFor(t, 30*time.Second, "the out-of-window taint goes", func(context.Context) (bool, error) {
			return w.Taint(t, "flow-b", kubeoceanv1alpha1.TaintOutOfTimeWindows) == nil, nil
		})
	})

	t.Run("a pod on a virtual node runs in the physical cluster and its status comes back", func(t *testing.T) {
		testenv.CreateNamespace(t, w.Virtual, "flow-workloads")
		waitPodRunning(t, w, "flow-workloads", "web", w.VirtualNode("flow-a"))
		physical, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName("flow-workloads", "web"), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		vpod, err := w.Virtual.CoreV1().Pods("flow-workloads").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if vpod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] != string(physical.UID) || physical.Spec.NodeName != "flow-a" {
			t.Fatalf("virtual pod annotations %v, physical pod on %q", vpod.Annotations, physical.Spec.NodeName)
		}
		// Kubeocean's own pod does not reduce what the node lends.
		w.WaitCPU(t, "flow-a", "2")
	})

	// The token of the last node removal confirmed on the binding.
	confirmed := ""
	t.Run("a node leaving the selector is drained and removed", func(t *testing.T) {
		waitPodRunning(t, w, "flow-workloads", "on-b", w.VirtualNode("flow-b"))
		n, err := w.Physical.CoreV1().Nodes().Get(ctx, "flow-b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels["pool"] = "busy"
		if _, err := w.Physical.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		// It runs a pod: a configuration change removes it only once the
		// operator confirms.
		confirmed = w.ConfirmNodeRemoval(t, confirmed)
		w.WaitNodeGone(t, "flow-b")
		waitPodGone(t, w, "flow-workloads", "on-b")
	})

	t.Run("deleting the policy reclaims its nodes before it goes", func(t *testing.T) {
		if err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(ctx, "flow-half", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		confirmed = w.ConfirmNodeRemoval(t, confirmed)
		w.WaitNodeGone(t, "flow-a")
		waitPodGone(t, w, "flow-workloads", "web")
		testenv.WaitFor(t, 30*time.Second, "the policy is gone", func(ctx context.Context) (bool, error) {
			_, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, "flow-half", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	})
}
