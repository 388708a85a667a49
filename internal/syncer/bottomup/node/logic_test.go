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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func selectorFor(key, value string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}},
	}}}
}

func TestChoosePolicy(t *testing.T) {
	node := physicalNode("node-a", map[string]string{"pool": "idle"})
	early, late := testNow.Add(-2*time.Hour), testNow.Add(-time.Hour)
	withSelector := func(key, value string) func(*kubeoceanv1alpha1.ResourceLeasingPolicy) {
		return func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.NodeSelector = selectorFor(key, value) }
	}
	otherCluster := func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.Cluster = "worker-2" }
	pinnedTo := func(mount string) func(*kubeoceanv1alpha1.ResourceLeasingPolicy) {
		return func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.MountNamespace = mount }
	}
	deleting := func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.DeletionTimestamp = &metav1.Time{Time: testNow} }
	invalid := func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.TimeZone = "Nowhere/Else" }
	tests := []struct {
		name     string
		policies []*kubeoceanv1alpha1.ResourceLeasingPolicy
		want     string
	}{
		{name: "none"},
		{name: "earliest created wins", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("b-late", late), policy("a-early", early)}, want: "a-early"},
		{name: "name breaks ties", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("zeta", early), policy("alpha", early)}, want: "alpha"},
		{name: "selector must match", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{
			policy("busy", early, withSelector("pool", "busy")), policy("idle", late, withSelector("pool", "idle"))}, want: "idle"},
		{name: "other bindings' policies do not count", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("x", early, otherCluster)}},
		// Another virtual cluster's binding of the same name, mounted
		// elsewhere, is not lent to even by the older policy.
		{name: "a policy pinned to another mount namespace does not count", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{
			policy("theirs", early, pinnedTo("their-mount")), policy("shared", late)}, want: "shared"},
		{name: "a policy pinned to the binding's mount namespace counts", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{
			policy("ours", early, pinnedTo(testMount)), policy("shared", late)}, want: "ours"},
		{name: "a deleting policy lends nothing", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("x", early, deleting), policy("y", late)}, want: "y"},
		{name: "an invalid policy lends nothing", policies: []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy("x", early, invalid)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := choosePolicy(tt.policies, borrower{name: testBinding, mountNamespace: testMount}, node)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Fatalf("chose %q, want %q", name, tt.want)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	node := physicalNode("node-a", map[string]string{"pool": "idle"})
	broken := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: "Like", Values: []string{"x"}}}}}}
	byName := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}}}
	tests := []struct {
		name     string
		selector *corev1.NodeSelector
		want     bool
	}{
		{name: "nil selects all", want: true},
		{name: "empty selects all", selector: &corev1.NodeSelector{}, want: true},
		{name: "matching label", selector: selectorFor("pool", "idle"), want: true},
		{name: "other label", selector: selectorFor("pool", "busy")},
		{name: "match field by name", selector: byName, want: true},
		{name: "a broken selector selects nothing", selector: broken},
	}
	for _, tt := range tests {
		if got := selects(tt.selector, node); got != tt.want {
			t.Errorf("%s: selects = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestOutOfWindowTaint(t *testing.T) {
	now := testNow
	reclaim := func(force bool, grace int32) *kubeoceanv1alpha1.ResourceLeasingPolicy {
		return policy("p", now, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
			p.Spec.ForceReclaim, p.Spec.GracefulReclaimPeriodSeconds = force, grace
		})
	}
	existing := func(effect corev1.TaintEffect, added *time.Time) *corev1.Taint {
		t := &corev1.Taint{Key: kubeoceanv1alpha1.TaintOutOfTimeWindows, Effect: effect}
		if added != nil {
			t.TimeAdded = &metav1.Time{Time: *added}
		}
		return t
	}
	fiveAgo, oneAgo := now.Add(-5*time.Minute), now.Add(-time.Minute)
	tests := []struct {
		name        string
		existing    *corev1.Taint
		policy      *kubeoceanv1alpha1.ResourceLeasingPolicy
		wantEffect  corev1.TaintEffect
		wantRequeue time.Duration
	}{
		{name: "no forced reclaim: NoSchedule", policy: reclaim(false, 0), wantEffect: corev1.TaintEffectNoSchedule},
		{name: "forced, no grace: NoExecute at once", policy: reclaim(true, 0), wantEffect: corev1.TaintEffectNoExecute},
		{name: "forced, first seen: NoSchedule for the grace period", policy: reclaim(true, 300),
			wantEffect: corev1.TaintEffectNoSchedule, wantRequeue: 5 * time.Minute},
		{name: "forced, within grace: wait the rest", policy: reclaim(true, 300), existing: existing(corev1.TaintEffectNoSchedule, &oneAgo),
			wantEffect: corev1.TaintEffectNoSchedule, wantRequeue: 4 * time.Minute},
		{name: "forced, grace passed: NoExecute", policy: reclaim(true, 300), existing: existing(corev1.TaintEffectNoSchedule, &fiveAgo),
			wantEffect: corev1.TaintEffectNoExecute},
		{name: "forced, already NoExecute: stays", policy: reclaim(true, 300), existing: existing(corev1.TaintEffectNoExecute, &oneAgo),
			wantEffect: corev1.TaintEffectNoExecute},
		{name: "forced, taint without a time: NoExecute", policy: reclaim(true, 300), existing: existing(corev1.TaintEffectNoSchedule, nil),
			wantEffect: corev1.TaintEffectNoExecute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			taint, requeue := outOfWindowTaint(tt.existing, tt.policy, now)
			if taint.Effect != tt.wantEffect || requeue != tt.wantRequeue {
				t.Fatalf("got %s after %v, want %s after %v", taint.Effect, requeue, tt.wantEffect, tt.wantRequeue)
			}
			if taint.TimeAdded == nil {
				t.Fatal("the taint must carry the time it was first added")
			}
		})
	}
}

func TestMergeTaints(t *testing.T) {
	taint := func(key string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Effect: effect}
	}
	ours := []taintID{{Key: "kubeocean.io/vnode", Effect: corev1.TaintEffectNoSchedule}, {Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}}
	current := []corev1.Taint{
		taint("kubeocean.io/vnode", corev1.TaintEffectNoSchedule),
		taint("dedicated", corev1.TaintEffectNoSchedule),
		taint("node.kubernetes.io/unreachable", corev1.TaintEffectNoExecute), // the virtual cluster's
		taint("user", corev1.TaintEffectNoSchedule),                          // a user's
	}
	want := []corev1.Taint{taint("kubeocean.io/vnode", corev1.TaintEffectNoSchedule), taint("gpu", corev1.TaintEffectNoSchedule)}
	got := mergeTaints(current, ours, want)
	var keys []string
	for _, t := range got {
		keys = append(keys, t.Key)
	}
	if wantKeys := []string{"kubeocean.io/vnode", "node.kubernetes.io/unreachable", "user", "gpu"}; !slices.Equal(keys, wantKeys) {
		t.Fatalf("merged taints %v, want %v", keys, wantKeys)
	}
}

func TestUnschedulableFollowsPhysicalUnlessUserChangedIt(t *testing.T) {
	tests := []struct {
		name                    string
		current, last, physical bool
		want                    bool
	}{
		{name: "physical cordoned", physical: true, want: true},
		{name: "physical uncordoned", current: true, last: true, physical: false, want: false},
		{name: "user cordoned the virtual node", current: true, want: true},
		{name: "user uncordoned while physical stays cordoned", current: false, last: true, physical: true, want: false},
	}
	for _, tt := range tests {
		node := &corev1.Node{Spec: corev1.NodeSpec{Unschedulable: tt.current}}
		node.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationLastAppliedMetadata: lastApplied{Unschedulable: tt.last}.encode()}
		got := applyMetadata(node, desiredNode{unschedulable: tt.physical}).Spec.Unschedulable
		if got != tt.want {
			t.Errorf("%s: unschedulable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPhysicalNodeChanged(t *testing.T) {
	base := physicalNode("node-a", map[string]string{"zone": "z1"})
	beat := base.DeepCopy()
	beat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(testNow.Add(time.Minute))
	relabelled := base.DeepCopy()
	relabelled.Labels["zone"] = "z2"
	notReady := base.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	cordoned := base.DeepCopy()
	cordoned.Spec.Unschedulable = true
	for name, tt := range map[string]struct {
		updated *corev1.Node
		want    bool
	}{
		"heartbeat only": {beat, false},
		"label":          {relabelled, true},
		"condition":      {notReady, true},
		"cordon":         {cordoned, true},
	} {
		if got := physicalNodeChanged(base, tt.updated); got != tt.want {
			t.Errorf("%s: changed = %v, want %v", name, got, tt.want)
		}
	}
}
