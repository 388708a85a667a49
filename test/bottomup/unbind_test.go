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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestUnbinding deletes a binding under a running syncer: the syncer drains
// and removes its virtual nodes, releases its policies and lets the binding
// go. It releases the reclaim finalizer of the policy pinned to its mount
// namespace, which no other binding uses, and leaves it on a live policy
// that names none: another binding "unbind" (of another virtual cluster,
// or a later one) may use that one.
func TestUnbinding(t *testing.T) {
	w := startSyncer(t, "unbind", "cls-unbind")
	ctx := t.Context()
	if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode("unbind-a", "4", "8Gi", map[string]string{"suite": "unbind"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "unbind-all"},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "unbind", MountNamespace: w.Mount},
	}
	// Selects no node: it is the binding's all the same.
	shared := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "unbind-shared"},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "unbind", NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "suite", Operator: corev1.NodeSelectorOpIn, Values: []string{"none"}}}}}}},
	}
	for _, p := range []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy, shared} {
		if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.WaitCPU(t, "unbind-a", "4")
	testenv.WaitFor(t, 30*time.Second, "the syncer's finalizer is on the binding and the policy's finalizer on the policy", func(ctx context.Context) (bool, error) {
		b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, "unbind", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		held := slices.Contains(b.Finalizers, kubeoceanv1alpha1.FinalizerClusterBindingSyncer)
		for _, name := range []string{"unbind-all", "unbind-shared"} {
			p, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			held = held && slices.Contains(p.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy)
		}
		return held, nil
	})

	if err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Delete(ctx, "unbind", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.WaitNodeGone(t, "unbind-a")
	testenv.WaitFor(t, 30*time.Second, "the binding is gone", func(ctx context.Context) (bool, error) {
		_, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, "unbind", metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	p, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, "unbind-all", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy) {
		t.Fatal("the policy pinned to the binding kept the reclaim finalizer of a binding that is gone")
	}
	if err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(ctx, "unbind-all", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err = w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, "unbind-shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy) {
		t.Error("unbinding released the reclaim finalizer of a live policy that another binding of the name may use")
	}
	// As the operator would once no binding "unbind" uses it.
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Patch(ctx, "unbind-shared", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(ctx, "unbind-shared", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
