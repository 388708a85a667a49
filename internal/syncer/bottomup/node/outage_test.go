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
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

func TestOutageMarks(t *testing.T) {
	last := testNow.Add(-time.Minute)
	had := []corev1.NodeCondition{{Type: conditionPhysicalReachable, Status: corev1.ConditionFalse}}
	cases := []struct {
		name       string
		answers    bool
		current    []corev1.NodeCondition
		wantTaint  bool
		wantStatus corev1.ConditionStatus // "" for no condition
	}{
		{"answers, never had an outage", true, nil, false, ""},
		{"answers after an outage", true, had, false, corev1.ConditionTrue},
		{"does not answer", false, nil, true, corev1.ConditionFalse},
		{"still does not answer", false, had, true, corev1.ConditionFalse},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			taint, cond := outageMarks(tc.answers, last, tc.current, testNow)
			if (taint != nil) != tc.wantTaint {
				t.Fatalf("taint = %v, want one: %v", taint, tc.wantTaint)
			}
			if taint != nil && (taint.Key != kubeoceanv1alpha1.TaintPhysicalUnreachable || taint.Effect != corev1.TaintEffectNoSchedule) {
				t.Errorf("taint = %v, want %s:NoSchedule (it must not evict)", taint, kubeoceanv1alpha1.TaintPhysicalUnreachable)
			}
			var got corev1.ConditionStatus
			if cond != nil {
				got = cond.Status
			}
			if got != tc.wantStatus {
				t.Fatalf("condition status = %q, want %q", got, tc.wantStatus)
			}
			if cond != nil && cond.Status == corev1.ConditionFalse && !strings.Contains(cond.Message, last.UTC().Format(time.RFC3339)) {
				t.Errorf("message %q does not name the last answer", cond.Message)
			}
		})
	}
}

// While the physical apiserver does not answer, the virtual node keeps its
// last known Ready condition (whatever the virtual cluster set, never the
// stale cache's), and says why its state is stale: a NoSchedule taint and
// a PhysicalClusterReachable=False condition, written once, with a Warning
// event. When the apiserver answers again, the taint goes, the condition
// turns True, a Normal event says so, and Ready is copied again.
func TestOutageMarksTheVirtualNodeAndClearsAfterwards(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")
	wantWrites(t, f, "create nodes")

	// The virtual cluster's own view of Ready (say an OutageRenewalLimit
	// let the Lease expire): the stale cache must not overwrite it.
	unknown := f.virtualNode(vnode).DeepCopy()
	unknown.Status.Conditions[0].Status = corev1.ConditionUnknown
	unknown.Status.Conditions[0].Reason = "NodeStatusUnknown"
	if _, err := f.virtual.CoreV1().Nodes().UpdateStatus(context.Background(), unknown, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refreshVirtualNodes()

	answers := false
	f.c.physicalAnswers = func() bool { return answers }
	f.c.physicalLastAnswer = func() time.Time { return testNow.Add(-10 * time.Second) }
	f.sync("node-a")
	wantWrites(t, f, "update nodes", "patch nodes/status")
	node := f.virtualNode(vnode)
	if findTaint(node.Spec.Taints, kubeoceanv1alpha1.TaintPhysicalUnreachable) == nil {
		t.Errorf("taints %v lack %s", node.Spec.Taints, kubeoceanv1alpha1.TaintPhysicalUnreachable)
	}
	if got := reachableStatus(node); got != corev1.ConditionFalse {
		t.Errorf("PhysicalClusterReachable = %q during the outage, want False", got)
	}
	if got := condition(node, corev1.NodeReady); got != corev1.ConditionUnknown {
		t.Errorf("Ready = %s during the outage, want the virtual cluster's Unknown kept", got)
	}
	wantEvent(t, f, "Warning "+EventPhysicalClusterUnreachable)

	f.clock.Step(time.Minute)
	f.sync("node-a")
	wantWrites(t, f) // written once per outage

	answers = true
	f.sync("node-a")
	wantWrites(t, f, "update nodes", "patch nodes/status")
	node = f.virtualNode(vnode)
	if taint := findTaint(node.Spec.Taints, kubeoceanv1alpha1.TaintPhysicalUnreachable); taint != nil {
		t.Errorf("taint %v stays after the outage", taint)
	}
	if got := reachableStatus(node); got != corev1.ConditionTrue {
		t.Errorf("PhysicalClusterReachable = %q after the outage, want True", got)
	}
	if got := condition(node, corev1.NodeReady); got != corev1.ConditionTrue {
		t.Errorf("Ready = %s once the physical cluster answers, want True", got)
	}
	wantEvent(t, f, "Normal "+EventPhysicalClusterReachable)
	f.sync("node-a")
	wantWrites(t, f)
}

func condition(node *corev1.Node, typ corev1.NodeConditionType) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func wantEvent(t *testing.T, f *fixture, prefix string) {
	t.Helper()
	select {
	case ev := <-f.recorder.Events:
		if !strings.HasPrefix(ev, prefix) {
			t.Errorf("event %q, want %q", ev, prefix)
		}
	default:
		t.Errorf("no event, want %q", prefix)
	}
}
