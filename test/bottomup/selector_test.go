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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestNodeSelectorScopesThePhysicalNodes: the syncer watches only the
// physical nodes its binding's label selector selects; when an edit of the
// selector would select nodes outside what it watches, it exits to be
// started again (as its Deployment would), and the new run lends them.
func TestNodeSelectorScopesThePhysicalNodes(t *testing.T) {
	w := startSyncer(t, "scope", "cls-scope")
	ctx := t.Context()
	for name, suite := range map[string]string{"scope-a": "scope", "scope-b": "scope-later"} {
		if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(name, "4", "8Gi", map[string]string{"suite": suite}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scope-all"},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "scope"},
	}
	if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.WaitCPU(t, "scope-a", "4")
	if _, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode("scope-b"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a node outside the binding's selector got a twin (err %v)", err)
	}

	w.UpdateBinding(t, func(binding *kubeoceanv1alpha1.ClusterBinding) {
		binding.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "suite", Operator: corev1.NodeSelectorOpIn, Values: []string{"scope", "scope-later"}}}}}}
	})
	exit := w.WaitSyncerExit(t, 30*time.Second)
	if exit == nil || !strings.Contains(exit.Error(), "restarting") {
		t.Fatalf("the syncer stopped with %v, want a restart for the new node selector", exit)
	}

	w.RunSyncer(t)
	w.WaitCPU(t, "scope-b", "4")
	testenv.WaitFor(t, 30*time.Second, "scope-a keeps its twin", func(ctx context.Context) (bool, error) {
		_, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode("scope-a"), metav1.GetOptions{})
		return err == nil, err
	})
}
