package bottomup

import (
	"context"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestUnbinding deletes a binding under a running syncer: the syncer drains
// and removes its virtual nodes, releases its policies and lets the binding
// go.
func TestUnbinding(t *testing.T) {
	w := startSyncer(t, "unbind", "cls-unbind")
	ctx := t.Context()
	if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode("unbind-a", "4", "8Gi", map[string]string{"suite": "unbind"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "unbind-all"},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "unbind"},
	}
	if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.WaitCPU(t, "unbind-a", "4")
	testenv.WaitFor(t, 30*time.Second, "the syncer's finalizer is on the binding and the policy's finalizer on the policy", func(ctx context.Context) (bool, error) {
		b, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, "unbind", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		p, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, "unbind-all", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.Contains(b.Finalizers, kubeoceanv1alpha1.FinalizerClusterBindingSyncer) &&
			slices.Contains(p.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy), nil
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
		t.Fatal("the policy kept the reclaim finalizer of a binding that is gone")
	}
	if err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(ctx, "unbind-all", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
