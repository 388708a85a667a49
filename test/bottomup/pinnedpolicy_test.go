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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestPolicyPinnedToAnotherMountNamespaceLendsNothing: another virtual
// cluster also has a binding "pin", mounted in another namespace; a policy
// pinned to that mount namespace (spec.mountNamespace) is its alone. It is
// older than this binding's own policy (and first by name), so it would be
// chosen if it counted: it does not limit this binding's node, gets no
// finalizer or status from this binding's syncer, and once this binding's
// policy is pinned away too, the node is lent by the unpinned policy of
// the name, never by the other binding's.
func TestPolicyPinnedToAnotherMountNamespaceLendsNothing(t *testing.T) {
	const node, elsewhere = "pin-a", "mount-of-another-pin"
	w := startSyncer(t, "pin", "cls-pin")
	ctx := t.Context()
	if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(node, "8", "16Gi", map[string]string{"suite": "pin"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lendCPU := func(name, mount, cpu string) {
		t.Helper()
		p := &kubeoceanv1alpha1.ResourceLeasingPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: w.Binding, MountNamespace: mount,
				ResourceLimits: []kubeoceanv1alpha1.ResourceLimit{{Resource: corev1.ResourceCPU, Quantity: ptr.To(resource.MustParse(cpu))}}},
		}
		if _, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lendCPU("pin-elsewhere", elsewhere, "2")
	lendCPU("pin-here", w.Mount, "6")
	w.WaitCPU(t, node, "6")
	waitLentBy(t, w, node, "pin-here")

	here := waitPolicy(t, w, "pin-here", "the binding's syncer holds and reports its pinned policy", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
		return slices.Contains(p.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy) && p.Status.Phase == kubeoceanv1alpha1.ResourceLeasingPolicyActive
	})
	theirs, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, "pin-elsewhere", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(theirs.Finalizers) != 0 || theirs.Status.Phase != "" {
		t.Errorf("the policy pinned to %s got finalizers %v and phase %q from this binding's syncer (its own policy: %v, %q)",
			elsewhere, theirs.Finalizers, theirs.Status.Phase, here.Finalizers, here.Status.Phase)
	}

	// The binding's policy moves to the other binding: the node is lent by
	// the policy both share by name, never by the other binding's own.
	lendCPU("pin-shared", "", "4")
	w.UpdatePolicy(t, "pin-here", func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.MountNamespace = elsewhere })
	w.WaitCPU(t, node, "4")
	waitLentBy(t, w, node, "pin-shared")
}

// waitLentBy waits until the virtual twin of physical names policy as the
// one that lends it.
func waitLentBy(t *testing.T, w *testenv.SyncerWorld, physical, policy string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, w.VirtualNode(physical)+" is lent by "+policy, func(ctx context.Context) (bool, error) {
		n, err := w.Virtual.CoreV1().Nodes().Get(ctx, w.VirtualNode(physical), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got := n.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy]
		return got == policy, fmt.Errorf("lent by %q", got)
	})
}

// waitPolicy waits until done accepts the policy and returns it.
func waitPolicy(t *testing.T, w *testenv.SyncerWorld, name, what string, done func(*kubeoceanv1alpha1.ResourceLeasingPolicy) bool) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	t.Helper()
	var last *kubeoceanv1alpha1.ResourceLeasingPolicy
	testenv.WaitFor(t, 30*time.Second, what, func(ctx context.Context) (bool, error) {
		p, err := w.PhysOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		return done(p), fmt.Errorf("finalizers %v, phase %q", p.Finalizers, p.Status.Phase)
	})
	return last
}
