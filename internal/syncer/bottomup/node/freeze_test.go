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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

func poolSelector(op corev1.NodeSelectorOperator, values ...string) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: op, Values: values}},
	}}}
}

// drainEvents returns the events recorded so far.
func drainEvents(f *fixture) []string {
	var out []string
	for {
		select {
		case ev := <-f.recorder.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// A spec the syncer cannot evaluate leaves the virtual nodes exactly as
// they were (no taint, drain, removal or capacity change), says why once,
// and the fix resumes reconciling at once.
func TestUnevaluableConfigurationFreezesNodes(t *testing.T) {
	tests := []struct {
		name string
		// typo breaks the binding or the policy "lender" in place.
		typo   func(b *kubeoceanv1alpha1.ClusterBinding, p *kubeoceanv1alpha1.ResourceLeasingPolicy)
		reason string
	}{
		{name: "binding selector value with a space", reason: "ClusterBinding worker-1 is invalid",
			typo: func(b *kubeoceanv1alpha1.ClusterBinding, _ *kubeoceanv1alpha1.ResourceLeasingPolicy) {
				b.Spec.NodeSelector = poolSelector(corev1.NodeSelectorOpIn, "gpu pool")
			}},
		{name: "binding selector Gt not an integer", reason: "ClusterBinding worker-1 is invalid",
			typo: func(b *kubeoceanv1alpha1.ClusterBinding, _ *kubeoceanv1alpha1.ResourceLeasingPolicy) {
				b.Spec.NodeSelector = poolSelector(corev1.NodeSelectorOpGt, "big")
			}},
		{name: "policy time zone typo", reason: "ResourceLeasingPolicy lender is invalid",
			typo: func(_ *kubeoceanv1alpha1.ClusterBinding, p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
				p.Spec.TimeZone = "Europe/Berln"
			}},
		{name: "policy selector that cannot be parsed", reason: "ResourceLeasingPolicy lender is invalid",
			typo: func(_ *kubeoceanv1alpha1.ClusterBinding, p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
				p.Spec.NodeSelector = poolSelector(corev1.NodeSelectorOpIn, "idle", "gpu pool")
			}},
		{name: "policy time window out of range", reason: "ResourceLeasingPolicy lender is invalid",
			typo: func(_ *kubeoceanv1alpha1.ClusterBinding, p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
				p.Spec.TimeWindows = []kubeoceanv1alpha1.TimeWindow{{Start: "25:00", End: "06:00"}}
			}},
		{name: "policy limit over 100 percent", reason: "ResourceLeasingPolicy lender is invalid",
			typo: func(_ *kubeoceanv1alpha1.ClusterBinding, p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
				p.Spec.ResourceLimits = []kubeoceanv1alpha1.ResourceLimit{{Resource: corev1.ResourceCPU, Percent: ptr.To[int32](150)}}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			good, lender := binding(), policy("lender", testNow.Add(-time.Hour))
			good.Spec.NodeSelector = poolSelector(corev1.NodeSelectorOpIn, "idle")
			lender.Spec.NodeSelector = poolSelector(corev1.NodeSelectorOpIn, "idle")
			fixtures.MustAdd(f.t, f.bindings, good)
			fixtures.MustAdd(f.t, f.policies, lender)
			fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"pool": "idle"}))
			fixtures.MustAdd(f.t, f.virtualPods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "web-uid"},
				Spec: corev1.PodSpec{NodeName: vnode}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
			f.sync("node-a")
			before := f.virtualNode(vnode)
			drainEvents(f)

			broken, brokenPolicy := good.DeepCopy(), lender.DeepCopy()
			tt.typo(broken, brokenPolicy)
			fixtures.MustAdd(f.t, f.bindings, broken)
			fixtures.MustAdd(f.t, f.policies, brokenPolicy)
			// What would otherwise change the node's capacity.
			fixtures.MustAdd(f.t, f.foreignPods, foreignPod("batch", "node-a", "2", corev1.PodRunning))

			for range 3 {
				if result := f.sync("node-a"); result.RequeueAfter != 0 {
					t.Fatalf("a frozen node is requeued after %v; the fix enqueues it", result.RequeueAfter)
				}
				wantWrites(t, f) // no update, delete or eviction of nodes or pods
			}
			after := f.virtualNode(vnode)
			if !after.Status.Allocatable.Cpu().Equal(*before.Status.Allocatable.Cpu()) || len(after.Spec.Taints) != len(before.Spec.Taints) {
				t.Fatalf("the frozen node changed: %+v -> %+v", before, after)
			}
			events := drainEvents(f)
			if len(events) != 1 || !strings.Contains(events[0], kubeoceanv1alpha1.EventConfigurationInvalid) || !strings.Contains(events[0], strings.Replace(tt.reason, " is invalid", "", 1)) {
				t.Fatalf("events = %q, want one %s naming %q", events, kubeoceanv1alpha1.EventConfigurationInvalid, tt.reason)
			}

			fixtures.MustAdd(f.t, f.bindings, good)
			fixtures.MustAdd(f.t, f.policies, lender)
			f.sync("node-a")
			wantWrites(t, f, "patch nodes/status")
			if got := f.virtualNode(vnode).Status.Allocatable.Cpu(); got.Cmp(resource.MustParse("6")) != 0 {
				t.Fatalf("cpu after the fix = %v, want 6", got)
			}
		})
	}
}

// An invalid policy whose (valid) selector does not pick a node has no say
// over it: the node lent by another policy is reconciled as usual.
func TestInvalidPolicyFreezesOnlyNodesItMaySelect(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)), policy("gpus", testNow, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.NodeSelector = poolSelector(corev1.NodeSelectorOpIn, "gpu")
		p.Spec.TimeZone = "Europe/Berln"
	}))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"pool": "idle"}))
	f.sync("node-a")
	wantWrites(t, f, "create nodes")

	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"pool": "gpu"}))
	f.sync("node-a")
	wantWrites(t, f)
	if events := drainEvents(f); len(events) != 1 || !strings.Contains(events[0], "ResourceLeasingPolicy gpus") {
		t.Fatalf("events = %q", events)
	}
}

func TestFrozenNodesReportEachReasonOnce(t *testing.T) {
	frozen := newFrozenNodes()
	steps := []struct {
		node, reason       string
		newNode, newReason bool
		thaw               bool
	}{
		{node: "a", reason: "r1", newNode: true, newReason: true},
		{node: "a", reason: "r1"},
		{node: "b", reason: "r1", newNode: true},
		{node: "a", reason: "r2", newNode: true, newReason: true},
		{node: "b", thaw: true, newNode: true},
		{node: "b", reason: "r1", newNode: true, newReason: true},
	}
	for i, s := range steps {
		if s.thaw {
			if got := frozen.thaw(s.node); got != s.newNode {
				t.Fatalf("step %d: thaw = %v", i, got)
			}
			continue
		}
		newNode, newReason := frozen.freeze(s.node, s.reason)
		if newNode != s.newNode || newReason != s.newReason {
			t.Fatalf("step %d: freeze(%s, %s) = %v, %v; want %v, %v", i, s.node, s.reason, newNode, newReason, s.newNode, s.newReason)
		}
	}
}
