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

package node

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

// A kubeconfig that reaches another physical cluster freezes the node,
// even though that cluster has no such node, until the operator accepts
// the new cluster's UID.
func TestPhysicalClusterChangedFreezesNodes(t *testing.T) {
	f, _ := drainFixture(t, func() error {
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	})
	pinned := binding()
	pinned.Status.PhysicalClusterUID = "uid-a"
	fixtures.MustAdd(f.t, f.bindings, pinned)
	f.c.physicalClusterUID = "uid-b"
	f.physicalNodes.(interface{ Delete(any) error }).Delete(physicalNode("node-a", nil))
	f.sync("node-a")
	wantWrites(t, f)
	if event := <-f.recorder.Events; !strings.Contains(event, kubeoceanv1alpha1.ReasonPhysicalClusterChanged) {
		t.Fatalf("event %q, want %s", event, kubeoceanv1alpha1.ReasonPhysicalClusterChanged)
	}

	accepted := pinned.DeepCopy()
	accepted.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster: "uid-b"}
	fixtures.MustAdd(f.t, f.bindings, accepted)
	f.sync("node-a")
	wantWrites(t, f, "update nodes", "create pods/eviction")
}

func TestPhysicalClusterChanged(t *testing.T) {
	pinned := binding()
	pinned.Status.PhysicalClusterUID = "a"
	accepted := pinned.DeepCopy()
	accepted.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster: "b"}
	for _, tt := range []struct {
		name     string
		binding  *kubeoceanv1alpha1.ClusterBinding
		observed string
		changed  bool
	}{
		{"nothing pinned yet", binding(), "b", false},
		{"same cluster", pinned, "a", false},
		{"unknown identity", pinned, "", false},
		{"another cluster", pinned, "b", true},
		{"another cluster accepted", accepted, "b", false},
		{"a third cluster after accepting the second", accepted, "c", true},
	} {
		if got := physicalClusterChanged(tt.binding, tt.observed) != ""; got != tt.changed {
			t.Errorf("%s: changed = %v, want %v", tt.name, got, tt.changed)
		}
	}
}

// heldFixture: a node running a pod whose policy was deleted, with a
// client for the binding's condition.
func heldFixture(t *testing.T) (*fixture, *kubeoceanfake.Clientset) {
	f, _ := drainFixture(t, func() error {
		return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
	})
	ocean := kubeoceanfake.NewClientset(binding())
	f.c.bindingsClient = ocean.KubeoceanV1alpha1()
	f.policies.(interface{ Delete(any) error }).Delete(policy("all", testNow.Add(-time.Hour)))
	return f, ocean
}

func heldCondition(t *testing.T, ocean *kubeoceanfake.Clientset) *metav1.Condition {
	t.Helper()
	b, err := ocean.KubeoceanV1alpha1().ClusterBindings().Get(t.Context(), testBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionNodeRemovalHeld)
}

// A policy deleted under a node that runs pods holds the node as it is,
// with a condition naming the token; the confirmation drains it by
// eviction only, past the drain timeout, and clears the condition.
func TestConfigRemovalOfNodeWithPodsWaitsForConfirmation(t *testing.T) {
	f, ocean := heldFixture(t)
	f.c.maxRemovalFraction = 1
	f.sync("node-a")
	wantWrites(t, f)
	held := heldCondition(t, ocean)
	token := configToken(binding(), nil)
	if held == nil || held.Status != metav1.ConditionTrue || !strings.Contains(held.Message, token) {
		t.Fatalf("condition %+v, want True naming token %s", held, token)
	}

	confirmed, err := ocean.KubeoceanV1alpha1().ClusterBindings().Get(t.Context(), testBinding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	confirmed.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationConfirmNodeRemoval: token}
	fixtures.MustAdd(f.t, f.bindings, confirmed)
	f.sync("node-a")
	wantWrites(t, f, "update nodes", "create pods/eviction")
	if held := heldCondition(t, ocean); held.Status != metav1.ConditionFalse {
		t.Fatalf("condition %+v after confirmation, want False", held)
	}
	f.clock.Step(time.Hour) // far past the drain timeout
	f.sync("node-a")
	wantWrites(t, f, "create pods/eviction")
}

// A confirmation of another configuration confirms nothing.
func TestStaleConfirmationHolds(t *testing.T) {
	f, _ := heldFixture(t)
	stale := binding()
	stale.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationConfirmNodeRemoval: configToken(binding(), []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("all", testNow)})}
	fixtures.MustAdd(f.t, f.bindings, stale)
	f.sync("node-a")
	wantWrites(t, f)
}

// Nodes without pods are removed within the share, held beyond it.
func TestConfigRemovalShare(t *testing.T) {
	for _, tt := range []struct {
		name     string
		deselect int
		held     bool
	}{{"one of three", 1, false}, {"two of three", 2, true}} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			fixtures.MustAdd(f.t, f.bindings, binding())
			fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
			names := []string{"node-a", "node-b", "node-c"}
			for _, n := range names {
				fixtures.MustAdd(f.t, f.physicalNodes, physicalNode(n, map[string]string{"pool": "idle"}))
				f.sync(n)
			}
			selective := binding()
			selective.Generation = 2
			selective.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"idle"}}}}}}
			fixtures.MustAdd(f.t, f.bindings, selective)
			for _, n := range names[:tt.deselect] {
				fixtures.MustAdd(f.t, f.physicalNodes, physicalNode(n, map[string]string{"pool": "busy"}))
			}
			f.sync("node-a")
			if got := len(f.writes()) == 0; got != tt.held {
				t.Fatalf("held = %v (writes %v), want %v", got, f.writes(), tt.held)
			}
		})
	}
}

// A node absent from the selector-scoped cache that still exists was
// deselected: held while it runs pods. One really gone is drained.
func TestAbsentNodeTellsDeselectedFromGone(t *testing.T) {
	for _, exists := range []bool{true, false} {
		f, _ := drainFixture(t, func() error { return nil })
		f.c.maxRemovalFraction = 1
		physical := kubefake.NewClientset()
		if exists {
			physical = kubefake.NewClientset(physicalNode("node-a", nil))
		}
		f.c.physicalNodesClient = physical.CoreV1()
		f.physicalNodes.(interface{ Delete(any) error }).Delete(physicalNode("node-a", nil))
		f.sync("node-a")
		if held := len(f.writes()) == 0; held != exists {
			t.Fatalf("physical node exists=%v: held = %v, writes %v", exists, held, f.writes())
		}
	}
}

// The condition shows on every binding: the first node reconciled normally
// says that nothing is held, once per start.
func TestNothingHeldIsReportedOnce(t *testing.T) {
	f := newFixture(t)
	ocean := kubeoceanfake.NewClientset(binding())
	f.c.bindingsClient = ocean.KubeoceanV1alpha1()
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")
	if held := heldCondition(t, ocean); held == nil || held.Status != metav1.ConditionFalse || held.Reason != kubeoceanv1alpha1.ReasonNoNodeRemovalHeld {
		t.Fatalf("condition %+v, want False %s", held, kubeoceanv1alpha1.ReasonNoNodeRemovalHeld)
	}
	ocean.ClearActions()
	f.sync("node-a")
	if n := len(ocean.Actions()); n != 0 {
		t.Fatalf("%d more binding requests, want none", n)
	}
}

// A physical node no policy lends and that has no twin is not held: there
// is nothing to remove, even while the share rule holds others.
func TestNodeWithoutTwinIsNotHeld(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour), func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"idle"}}}}}}
	}))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"pool": "idle"}), physicalNode("node-b", nil))
	f.sync("node-a")
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"pool": "busy"}))
	f.sync("node-a") // held: one of one node
	f.sync("node-b")
	if f.c.held.thaw("node-b") {
		t.Fatal("a node without a twin was held")
	}
	if !f.c.held.thaw("node-a") {
		t.Fatal("the lent node was not held")
	}
}
