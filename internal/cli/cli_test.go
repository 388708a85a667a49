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

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestNodeSelector(t *testing.T) {
	got, err := nodeSelector("pool=spare,zone in (a,b),!gpu,tier!=db")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]corev1.NodeSelectorOperator{"pool": corev1.NodeSelectorOpIn, "zone": corev1.NodeSelectorOpIn,
		"gpu": corev1.NodeSelectorOpDoesNotExist, "tier": corev1.NodeSelectorOpNotIn}
	reqs := got.NodeSelectorTerms[0].MatchExpressions
	if len(got.NodeSelectorTerms) != 1 || len(reqs) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for _, r := range reqs {
		if want[r.Key] != r.Operator {
			t.Errorf("%s: operator %s, want %s", r.Key, r.Operator, want[r.Key])
		}
		if r.Key == "zone" && strings.Join(r.Values, ",") != "a,b" {
			t.Errorf("zone values %v", r.Values)
		}
	}
	if _, err := nodeSelector("pool in spare"); err == nil {
		t.Error("a malformed selector was accepted")
	}
}

func TestBindRefusesWhatAdmissionWould(t *testing.T) {
	for _, o := range []bindOptions{
		{name: "b", clusterID: "Not_A_Label"},
		{name: "b", clusterID: "much-too-long-for-a-cluster-id"},
		{name: "b", nodeSelector: "gpu pool=x"},
	} {
		if _, err := o.complete(); err == nil {
			t.Errorf("%+v was accepted", o)
		}
	}
	o := bindOptions{name: "worker-1"}
	b, err := o.complete()
	if err != nil {
		t.Fatal(err)
	}
	if b.Spec.ClusterID != "worker-1" || b.Spec.MountNamespace != "kubeocean-worker-1" || b.Spec.SecretRef.Name != "worker-1-kubeconfig" {
		t.Fatalf("defaults: %+v", b.Spec)
	}
	// The policy --policy creates lends to this binding alone.
	if p := o.leasingPolicy(b); p.Spec.Cluster != "worker-1" || p.Spec.MountNamespace != "kubeocean-worker-1" {
		t.Fatalf("--policy: %+v", p.Spec)
	}
}

func TestPrintStatus(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	node := func(name, cpu, memory string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory)},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	pod := func(phase corev1.PodPhase) corev1.Pod { return corev1.Pod{Status: corev1.PodStatus{Phase: phase}} }
	view := bindingView{
		binding: kubeoceanv1alpha1.ClusterBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "worker-1", CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Hour))},
			Spec:       kubeoceanv1alpha1.ClusterBindingSpec{ClusterID: "w1"},
			Status: kubeoceanv1alpha1.ClusterBindingStatus{Phase: kubeoceanv1alpha1.ClusterBindingReady, Conditions: []metav1.Condition{
				{Type: kubeoceanv1alpha1.ClusterBindingConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", Message: "The syncer\nruns."}}},
		},
		nodes: []corev1.Node{node("vnode-w1-a", "2", "4Gi"), node("vnode-w1-b", "1500m", "2Gi")},
		pods: map[string][]corev1.Pod{"vnode-w1-a": {pod(corev1.PodRunning), pod(corev1.PodRunning)}, "vnode-w1-b": {pod(corev1.PodPending)},
			"someone-else": {pod(corev1.PodRunning)}},
		warnings: []corev1.Event{{Reason: "SyncerFailed", Message: "boom", LastTimestamp: metav1.NewTime(now.Add(-90 * time.Second))}},
	}
	var out bytes.Buffer
	if err := printStatus(&out, []bindingView{view}, now); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"NAME       CLUSTER-ID   PHASE   REASON   NODES   CPU    MEMORY   PODS   AGE",
		"worker-1   w1           Ready   Ready    2       3500m   6Gi      3      3h\n",
		"Ready       True     Ready    The syncer runs.",
		"vnode-w1-b   True     1500m   2Gi      1",
		"Pods: 2 Running, 1 Pending",
		"90s ago\tSyncerFailed\tboom",
	} {
		if !strings.Contains(oneLine(out.String()), oneLine(want)) {
			t.Errorf("missing %q in:\n%s", want, out.String())
		}
	}
}
