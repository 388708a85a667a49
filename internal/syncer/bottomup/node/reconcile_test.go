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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const vnode = "vnode-cls-1-node-a"

func wantWrites(t *testing.T, f *fixture, want ...string) {
	t.Helper()
	if got := f.writes(); !slices.Equal(got, want) {
		t.Fatalf("writes = %v, want %v", got, want)
	}
}

func TestCreatesVirtualNodeWithLendableCapacity(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("half-cpu", testNow.Add(-time.Hour), cpuPercent(50)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"zone": "z1", corev1.LabelHostname: "node-a"}))
	fixtures.MustAdd(f.t, f.foreignPods,
		foreignPod("web", "node-a", "2", corev1.PodRunning),
		foreignPod("done", "node-a", "3", corev1.PodSucceeded),
		foreignPod("elsewhere", "node-b", "3", corev1.PodRunning),
	)

	f.sync("node-a")
	wantWrites(t, f, "create nodes")
	n := f.virtualNode(vnode)
	if got := n.Status.Allocatable.Cpu(); got.Cmp(resource.MustParse("3")) != 0 {
		t.Errorf("cpu = %v, want 3 (half of 8-2)", got)
	}
	if got := n.Status.Capacity[corev1.ResourcePods]; got.Cmp(resource.MustParse("109")) != 0 {
		t.Errorf("pods = %v, want 109", got.String())
	}
	wantLabels := map[string]string{
		"zone": "z1", corev1.LabelHostname: vnode,
		kubeoceanv1alpha1.LabelManagedBy: "kubeocean", kubeoceanv1alpha1.LabelClusterID: testClusterID,
		kubeoceanv1alpha1.LabelClusterBinding: testBinding, kubeoceanv1alpha1.LabelPhysicalNodeName: "node-a",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if n.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy] != "half-cpu" {
		t.Errorf("policy annotation = %q", n.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy])
	}
	if findTaint(n.Spec.Taints, "dedicated") == nil || findTaint(n.Spec.Taints, kubeoceanv1alpha1.TaintVirtualNode) == nil {
		t.Errorf("taints = %v, want the physical one and the default one", n.Spec.Taints)
	}
	if len(n.Status.Conditions) != 1 || n.Status.NodeInfo.KubeletVersion != "v1.36.3" {
		t.Errorf("conditions/nodeInfo not copied: %+v", n.Status)
	}

	f.sync("node-a")
	wantWrites(t, f) // idempotent
}

func TestForeignPodChangesCapacityOnlyInStatus(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")

	fixtures.MustAdd(f.t, f.foreignPods, foreignPod("batch", "node-a", "1500m", corev1.PodRunning))
	f.sync("node-a")
	wantWrites(t, f, "patch nodes/status")
	if got := f.virtualNode(vnode).Status.Allocatable.Cpu(); got.Cmp(resource.MustParse("6500m")) != 0 {
		t.Fatalf("cpu = %v, want 6500m", got)
	}
}

func TestHeartbeatAloneCausesNoWrite(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	physical := physicalNode("node-a", nil)
	fixtures.MustAdd(f.t, f.physicalNodes, physical)
	f.sync("node-a")

	beat := physical.DeepCopy()
	beat.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(testNow)
	fixtures.MustAdd(f.t, f.physicalNodes, beat)
	f.sync("node-a")
	wantWrites(t, f)

	notReady := beat.DeepCopy()
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	fixtures.MustAdd(f.t, f.physicalNodes, notReady)
	f.sync("node-a")
	wantWrites(t, f, "patch nodes/status")
}

func TestUserEditsSurviveAndStaleOnesGo(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", map[string]string{"zone": "z1", "tier": "gold"}))
	f.sync("node-a")

	// A user labels and taints the virtual node.
	edited := f.virtualNode(vnode)
	edited.Labels["team"] = "ml"
	edited.Annotations["note"] = "reserved"
	edited.Spec.Taints = append(edited.Spec.Taints, corev1.Taint{Key: "user", Effect: corev1.TaintEffectNoSchedule})
	if _, err := f.virtual.CoreV1().Nodes().Update(t.Context(), edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refreshVirtualNodes()

	// The physical node loses a label and its taint.
	changed := physicalNode("node-a", map[string]string{"zone": "z2"})
	changed.Spec.Taints = nil
	fixtures.MustAdd(f.t, f.physicalNodes, changed)
	f.sync("node-a")
	n := f.virtualNode(vnode)
	if n.Labels["team"] != "ml" || n.Annotations["note"] != "reserved" || findTaint(n.Spec.Taints, "user") == nil {
		t.Errorf("user edits lost: labels=%v annotations=%v taints=%v", n.Labels, n.Annotations, n.Spec.Taints)
	}
	if _, ok := n.Labels["tier"]; ok || n.Labels["zone"] != "z2" || findTaint(n.Spec.Taints, "dedicated") != nil {
		t.Errorf("physical changes not applied: labels=%v taints=%v", n.Labels, n.Spec.Taints)
	}
	f.sync("node-a")
	wantWrites(t, f)
}

func TestDisableNodeDefaultTaint(t *testing.T) {
	f := newFixture(t)
	b := binding()
	b.Spec.DisableNodeDefaultTaint = true
	fixtures.MustAdd(f.t, f.bindings, b)
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")
	if findTaint(f.virtualNode(vnode).Spec.Taints, kubeoceanv1alpha1.TaintVirtualNode) != nil {
		t.Fatal("default taint present although disabled")
	}
}

func TestTimeWindows(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	// Friday 12:00 now; the window is 18:00-06:00, so the node is outside.
	fixtures.MustAdd(f.t, f.policies, policy("nights", testNow.Add(-time.Hour), func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.TimeWindows = []kubeoceanv1alpha1.TimeWindow{{Start: "18:00", End: "06:00"}}
		p.Spec.ForceReclaim = true
		p.Spec.GracefulReclaimPeriodSeconds = 600
	}))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))

	result := f.sync("node-a")
	taint := findTaint(f.virtualNode(vnode).Spec.Taints, kubeoceanv1alpha1.TaintOutOfTimeWindows)
	if taint == nil || taint.Effect != corev1.TaintEffectNoSchedule {
		t.Fatalf("outside the window: taint %v, want NoSchedule", taint)
	}
	if result.RequeueAfter != 10*time.Minute {
		t.Fatalf("requeue after %v, want the 10m graceful period", result.RequeueAfter)
	}

	f.clock.Step(10 * time.Minute)
	result = f.sync("node-a")
	taint = findTaint(f.virtualNode(vnode).Spec.Taints, kubeoceanv1alpha1.TaintOutOfTimeWindows)
	if taint == nil || taint.Effect != corev1.TaintEffectNoExecute {
		t.Fatalf("after the graceful period: taint %v, want NoExecute", taint)
	}
	if want := 5*time.Hour + 50*time.Minute; result.RequeueAfter != want {
		t.Fatalf("requeue after %v, want %v (the window opens at 18:00)", result.RequeueAfter, want)
	}
	windowTaints := 0
	for _, taint := range f.virtualNode(vnode).Spec.Taints {
		if taint.Key == kubeoceanv1alpha1.TaintOutOfTimeWindows {
			windowTaints++
		}
	}
	if windowTaints != 1 {
		t.Fatalf("the NoSchedule taint must be replaced, not kept beside NoExecute: %v", f.virtualNode(vnode).Spec.Taints)
	}

	f.clock.SetTime(time.Date(2026, 11, 20, 18, 0, 0, 0, time.UTC))
	result = f.sync("node-a")
	if findTaint(f.virtualNode(vnode).Spec.Taints, kubeoceanv1alpha1.TaintOutOfTimeWindows) != nil {
		t.Fatal("inside the window the taint must go")
	}
	if result.RequeueAfter != 12*time.Hour {
		t.Fatalf("requeue after %v, want 12h (the window closes at 06:00)", result.RequeueAfter)
	}
}

func TestDrainAndRemove(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app", UID: "pod-uid"},
		Spec: corev1.PodSpec{NodeName: vnode}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if _, err := f.virtual.CoreV1().Pods("default").Create(t.Context(), running, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fixtures.MustAdd(f.t, f.virtualPods, running)

	// The physical node goes (a configuration change would wait for
	// confirmation and never delete pods: guard_test.go).
	f.physicalNodes.(interface{ Delete(any) error }).Delete(physicalNode("node-a", nil))
	result := f.sync("node-a")
	wantWrites(t, f, "update nodes", "delete pods")
	if findTaint(f.virtualNode(vnode).Spec.Taints, kubeoceanv1alpha1.TaintVirtualNodeDeleting) == nil {
		t.Fatal("deletion taint missing")
	}
	if result.RequeueAfter != drainRecheck {
		t.Fatalf("requeue after %v, want %v while a pod remains", result.RequeueAfter, drainRecheck)
	}
	if ev := <-f.recorder.Events; !strings.Contains(ev, "Draining") {
		t.Fatalf("event %q", ev)
	}

	// The pod is terminating: still counted, not deleted twice.
	terminating := running.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{Time: testNow}
	fixtures.MustAdd(f.t, f.virtualPods, terminating)
	f.sync("node-a")
	wantWrites(t, f)

	f.virtualPods.(interface{ Delete(any) error }).Delete(terminating)
	f.sync("node-a")
	wantWrites(t, f, "delete nodes")
}

func TestRelentNodeLosesDeletionTaint(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	f.sync("node-a")
	// Taint as a drain would, but keep a pod so the node is not deleted.
	fixtures.MustAdd(f.t, f.virtualPods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "d", Name: "p"}, Spec: corev1.PodSpec{NodeName: vnode},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	if _, err := f.c.remove(t.Context(), vnode, "test", false, false); err != nil {
		t.Fatal(err)
	}
	f.refreshVirtualNodes()
	f.sync("node-a")
	if findTaint(f.virtualNode(vnode).Spec.Taints, kubeoceanv1alpha1.TaintVirtualNodeDeleting) != nil {
		t.Fatal("a node lent again kept its deletion taint")
	}
}

func TestRemoveReasons(t *testing.T) {
	deleting := binding()
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	deleting.Finalizers = []string{"x"}
	selective := binding()
	selective.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"idle"}}}}}}
	tests := []struct {
		name    string
		binding *kubeoceanv1alpha1.ClusterBinding
		node    *corev1.Node
		policy  *kubeoceanv1alpha1.ResourceLeasingPolicy
	}{
		{name: "binding gone", node: physicalNode("node-a", nil), policy: policy("all", testNow)},
		{name: "binding deleting", binding: deleting, node: physicalNode("node-a", nil), policy: policy("all", testNow)},
		{name: "physical node gone", binding: binding(), policy: policy("all", testNow)},
		{name: "not selected", binding: selective, node: physicalNode("node-a", map[string]string{"pool": "busy"}), policy: policy("all", testNow)},
		{name: "no policy", binding: binding(), node: physicalNode("node-a", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			// A lone node without pods: no share rule (guard_test.go).
			f.c.maxRemovalFraction = 1
			existing := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vnode, UID: "v", Labels: map[string]string{
				kubeoceanv1alpha1.LabelManagedBy: "kubeocean", kubeoceanv1alpha1.LabelClusterID: testClusterID,
				kubeoceanv1alpha1.LabelPhysicalNodeName: "node-a"}}}
			if _, err := f.virtual.CoreV1().Nodes().Create(t.Context(), existing, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.refreshVirtualNodes()
			if tt.binding != nil {
				fixtures.MustAdd(f.t, f.bindings, tt.binding)
			}
			if tt.node != nil {
				fixtures.MustAdd(f.t, f.physicalNodes, tt.node)
			}
			if tt.policy != nil {
				fixtures.MustAdd(f.t, f.policies, tt.policy)
			}
			f.sync("node-a")
			wantWrites(t, f, "update nodes", "delete nodes")
		})
	}
}

func TestForeignNodeWithOurNameIsLeftAlone(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	if _, err := f.virtual.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vnode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refreshVirtualNodes()
	f.virtual.ClearActions()
	_, err := f.c.sync(t.Context(), "node-a")
	if err == nil {
		t.Fatal("a name collision must be an error")
	}
	wantWrites(t, f)
	if ev := <-f.recorder.Events; !strings.Contains(ev, "NodeNameCollision") {
		t.Fatalf("event %q", ev)
	}
}

func TestNotReadyDoesNotFightTheLifecycleController(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	physical := physicalNode("node-a", nil)
	physical.Status.Conditions[0].Status, physical.Status.Conditions[0].Reason = corev1.ConditionFalse, "KubeletNotReady"
	fixtures.MustAdd(f.t, f.physicalNodes, physical)
	f.sync("node-a")

	// The virtual node-lifecycle controller marks it Unknown.
	n := f.virtualNode(vnode)
	n.Status.Conditions[0].Status, n.Status.Conditions[0].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
	if _, err := f.virtual.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refreshVirtualNodes()
	f.sync("node-a")
	wantWrites(t, f)

	// The physical node recovers: Ready comes back at once.
	ready := physical.DeepCopy()
	ready.Status.Conditions[0].Status, ready.Status.Conditions[0].Reason = corev1.ConditionTrue, "KubeletReady"
	fixtures.MustAdd(f.t, f.physicalNodes, ready)
	f.sync("node-a")
	wantWrites(t, f, "patch nodes/status")
	if got := f.virtualNode(vnode).Status.Conditions[0].Status; got != corev1.ConditionTrue {
		t.Fatalf("Ready = %s after the physical node recovered", got)
	}
}

// The binding's own pods run on what it lent and do not reduce it; another
// binding's pods on the same physical node (of this virtual cluster, or of
// another one even with the same cluster ID) run on what their binding was
// lent and are not this binding's to lend: they count like any other pod.
func TestOnlyTheBindingsOwnPodsDoNotReduceCapacity(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	ours := foreignPod("ours", "node-a", "3", corev1.PodRunning)
	ours.Labels = testOwner.Stamp(nil)
	sibling := foreignPod("sibling", "node-a", "2", corev1.PodRunning)
	sibling.Labels = ownership.Owner{ClusterID: "cls-2", BindingUID: "uid-2"}.Stamp(nil)
	stranger := foreignPod("stranger", "node-a", "1", corev1.PodRunning)
	stranger.Labels = ownership.Owner{ClusterID: testClusterID, BindingUID: "uid-of-another-virtual-cluster"}.Stamp(nil)
	fixtures.MustAdd(f.t, f.foreignPods, ours, sibling, stranger)
	f.sync("node-a")
	n := f.virtualNode(vnode)
	if got := n.Status.Allocatable.Cpu(); got.Cmp(resource.MustParse("5")) != 0 {
		t.Fatalf("cpu = %v, want 8 - 2 - 1: the other bindings' pods count, the binding's own do not", got)
	}
	if got := n.Status.Allocatable[corev1.ResourcePods]; got.Value() != 108 {
		t.Fatalf("pods = %v, want 110 - 2", got.String())
	}
}

// A foreign Node the label-scoped lister cannot see makes the create fail
// with AlreadyExists: one GET shows it is not ours, which is reported and
// not retried.
func TestInvisibleForeignNodeWithOurNameIsReportedNotRetried(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	if _, err := f.virtual.CoreV1().Nodes().Create(t.Context(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vnode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.virtual.ClearActions() // the lister is not refreshed: it cannot see the node
	_, err := f.c.sync(t.Context(), "node-a")
	if !controller.IsTerminal(err) {
		t.Fatalf("sync = %v, want a terminal error", err)
	}
	wantWrites(t, f, "create nodes")
	if ev := <-f.recorder.Events; !strings.Contains(ev, kubeoceanv1alpha1.EventNodeNameCollision) {
		t.Fatalf("event %q", ev)
	}
}

// A physical node name longer than a label value is mirrored: the virtual
// node's name is hashed, the annotation holds the name, the label is left
// out, and every reader finds the physical node through the annotation.
func TestLongPhysicalNodeNameIsMirrored(t *testing.T) {
	long := strings.Repeat("n", 100) + ".example.com"
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode(long, nil))
	f.sync(long)
	wantWrites(t, f, "create nodes")
	n := f.virtualNode(kubeoceanv1alpha1.VirtualNodeName(testClusterID, long))
	if _, ok := n.Labels[kubeoceanv1alpha1.LabelPhysicalNodeName]; ok {
		t.Errorf("label %s set to a value longer than 63", kubeoceanv1alpha1.LabelPhysicalNodeName)
	}
	if got := physicalNameOf(n); len(got) != 1 || got[0] != long {
		t.Fatalf("physical name read back = %v", got)
	}
	f.sync(long)
	wantWrites(t, f) // idempotent
}

// TestAdvertisesKubeletEndpoint: with the kubelet API on, a virtual node
// points at the syncer (one dialable address, its own port, recorded for
// the next start) instead of at the physical kubelet.
func TestAdvertisesKubeletEndpoint(t *testing.T) {
	f := newFixture(t)
	var recorded []*corev1.Node
	f.c.kubeletEndpoint = func(name string, current *corev1.Node) (string, int, error) {
		recorded = append(recorded, current)
		return "10.1.2.3", 10251, nil
	}
	fixtures.MustAdd(f.t, f.bindings, binding())
	fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))

	f.sync("node-a")
	n := f.virtualNode(vnode)
	if want := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}}; !equality.Semantic.DeepEqual(n.Status.Addresses, want) {
		t.Errorf("addresses = %v, want %v", n.Status.Addresses, want)
	}
	if n.Status.DaemonEndpoints.KubeletEndpoint.Port != 10251 || n.Annotations[kubeoceanv1alpha1.AnnotationKubeletPort] != "10251" {
		t.Errorf("port = %d, annotation %q; want 10251", n.Status.DaemonEndpoints.KubeletEndpoint.Port, n.Annotations[kubeoceanv1alpha1.AnnotationKubeletPort])
	}
	f.refreshVirtualNodes()
	f.sync("node-a")
	wantWrites(t, f) // idempotent
	if len(recorded) != 2 || recorded[0] != nil || recorded[1] == nil {
		t.Errorf("the endpoint was asked with %v, want nil then the created node", recorded)
	}
}

// admitNodes puts on every node created through the fake client the taint
// the API server's NodeTaint admission puts on new nodes.
func admitNodes(f *fixture) {
	f.virtual.PrependReactor("create", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		node := action.(k8stesting.CreateAction).GetObject().(*corev1.Node)
		node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
		return false, nil, nil
	})
}

// A node created Ready is schedulable at once: the syncer removes the
// not-ready taint admission put on it, with the write the node's first
// event brings, instead of leaving it to the node lifecycle controller's
// pace. A node not Ready keeps it until it is Ready.
func TestReadyNodeLosesTheNotReadyTaint(t *testing.T) {
	t.Run("created ready", func(t *testing.T) {
		f := newFixture(t)
		admitNodes(f)
		fixtures.MustAdd(f.t, f.bindings, binding())
		fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
		fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
		f.sync("node-a")
		wantWrites(t, f, "create nodes")
		f.sync("node-a") // the node's event
		wantWrites(t, f, "update nodes")
		n := f.virtualNode(vnode)
		if findTaint(n.Spec.Taints, corev1.TaintNodeNotReady) != nil {
			t.Errorf("taints = %v, want no %s", n.Spec.Taints, corev1.TaintNodeNotReady)
		}
		if findTaint(n.Spec.Taints, "dedicated") == nil || findTaint(n.Spec.Taints, kubeoceanv1alpha1.TaintVirtualNode) == nil {
			t.Errorf("taints = %v, want the physical one and the default one kept", n.Spec.Taints)
		}
		f.sync("node-a")
		wantWrites(t, f)
	})
	t.Run("not ready, then ready", func(t *testing.T) {
		f := newFixture(t)
		admitNodes(f)
		fixtures.MustAdd(f.t, f.bindings, binding())
		fixtures.MustAdd(f.t, f.policies, policy("all", testNow.Add(-time.Hour)))
		physical := physicalNode("node-a", nil)
		physical.Status.Conditions[0].Status = corev1.ConditionFalse
		fixtures.MustAdd(f.t, f.physicalNodes, physical)
		f.sync("node-a")
		f.sync("node-a")
		wantWrites(t, f)
		if n := f.virtualNode(vnode); findTaint(n.Spec.Taints, corev1.TaintNodeNotReady) == nil {
			t.Fatalf("taints = %v, want %s kept on a node not Ready", n.Spec.Taints, corev1.TaintNodeNotReady)
		}
		fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
		f.sync("node-a")
		wantWrites(t, f, "patch nodes/status")
		f.sync("node-a")
		wantWrites(t, f, "update nodes")
		if n := f.virtualNode(vnode); findTaint(n.Spec.Taints, corev1.TaintNodeNotReady) != nil {
			t.Errorf("taints = %v, want no %s once the node is Ready", n.Spec.Taints, corev1.TaintNodeNotReady)
		}
	})
}
