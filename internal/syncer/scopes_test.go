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

package syncer

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

func terms(terms ...corev1.NodeSelectorTerm) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: terms}
}

func TestNodeLabelSelector(t *testing.T) {
	oneTerm := terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		expr("example.com/lendable", corev1.NodeSelectorOpExists),
		expr("zone", corev1.NodeSelectorOpIn, "a", "b"),
		expr("pool", corev1.NodeSelectorOpNotIn, "system"),
		expr("example.com/reserved", corev1.NodeSelectorOpDoesNotExist),
	}})
	tests := []struct {
		name     string
		selector *corev1.NodeSelector
		want     string
		ok       bool
	}{
		{"no selector", nil, "", true},
		{"no terms", terms(), "", true},
		{"one term of label expressions", oneTerm, "example.com/lendable,!example.com/reserved,pool notin (system),zone in (a,b)", true},
		{"two terms are an OR", terms(oneTerm.NodeSelectorTerms[0], oneTerm.NodeSelectorTerms[0]), "", false},
		{"field expressions", terms(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			expr("metadata.name", corev1.NodeSelectorOpIn, "n1")}}), "", false},
		{"Gt", terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			expr("cores", corev1.NodeSelectorOpGt, "8")}}), "", false},
		{"an invalid key", terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			expr("not a key", corev1.NodeSelectorOpExists)}}), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := nodeLabelSelector(tt.selector)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("nodeLabelSelector = %q, %v; want %q, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// TestNodeLabelSelectorSelectsLikeTheNodeSelector checks, node by node,
// that the API server's filter never drops a node the binding selects.
func TestNodeLabelSelectorSelectsLikeTheNodeSelector(t *testing.T) {
	selector := terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		expr("example.com/lendable", corev1.NodeSelectorOpExists),
		expr("zone", corev1.NodeSelectorOpIn, "a", "b"),
		expr("pool", corev1.NodeSelectorOpNotIn, "system"),
	}})
	scoped, ok := nodeLabelSelector(selector)
	if !ok {
		t.Fatal("the selector should be expressible")
	}
	parsed, err := labels.Parse(scoped)
	if err != nil {
		t.Fatal(err)
	}
	affinity, err := nodeaffinity.NewNodeSelector(selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, nodeLabels := range []map[string]string{
		{"example.com/lendable": "", "zone": "a"},
		{"example.com/lendable": "true", "zone": "b", "pool": "batch"},
		{"example.com/lendable": "true", "zone": "b", "pool": "system"},
		{"example.com/lendable": "true", "zone": "c"},
		{"zone": "a"},
		{},
	} {
		node := &corev1.Node{}
		node.Labels = nodeLabels
		if got, want := parsed.Matches(labels.Set(nodeLabels)), affinity.Match(node); got != want {
			t.Errorf("labels %v: label selector %v, node selector %v", nodeLabels, got, want)
		}
	}
}

func TestNeedsRestart(t *testing.T) {
	binding := func(mutate func(*kubeoceanv1alpha1.ClusterBindingSpec)) *kubeoceanv1alpha1.ClusterBinding {
		b := &kubeoceanv1alpha1.ClusterBinding{Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			MountNamespace: "kubeocean-worker",
			NodeSelector: terms(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				expr("example.com/lendable", corev1.NodeSelectorOpExists)}}),
		}}
		b.Spec.SecretRef.Name, b.Spec.SecretRef.Namespace = "kc", "kubeocean-system"
		if mutate != nil {
			mutate(&b.Spec)
		}
		return b
	}
	running := binding(nil)
	tests := []struct {
		name    string
		updated *kubeoceanv1alpha1.ClusterBinding
		want    bool
	}{
		{"unchanged", binding(nil), false},
		{"default taint", binding(func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.DisableNodeDefaultTaint = true }), false},
		{"mount namespace", binding(func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.MountNamespace = "other" }), true},
		{"secret", binding(func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.SecretRef.Name = "kc2" }), true},
		{"another label scope", binding(func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0].Key = "example.com/other"
		}), true},
		{"a selector without label scope", binding(func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms = append(s.NodeSelector.NodeSelectorTerms, s.NodeSelector.NodeSelectorTerms[0])
		}), true},
		// The node controller freezes the binding's nodes; the running scope
		// stays until the selector is fixed.
		{"a selector that cannot be evaluated", binding(func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0] = expr("example.com/pool", corev1.NodeSelectorOpIn, "gpu pool")
		}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsRestart(running, tt.updated); got != tt.want {
				t.Fatalf("needsRestart = %v, want %v", got, tt.want)
			}
		})
	}
}

// The binding's token Secrets are cached as the pod controller's records,
// in an informer of their own; the copies' informer holds every other
// Secret of the binding, whole.
func TestSecretScopesSplitTokensFromCopies(t *testing.T) {
	owner := ownership.Owner{ClusterID: "cls-a", BindingUID: "binding-uid"}
	token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "p-token",
		Labels: owner.Stamp(map[string]string{kubeoceanv1alpha1.LabelPodToken: "true"})}, Data: map[string][]byte{"token": []byte("t")}}
	copied := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "copy", Labels: owner.Stamp(nil)},
		Data: map[string][]byte{"password": []byte("p")}}
	other := owner
	other.BindingUID = "other-binding"
	othersToken := token.DeepCopy()
	othersToken.Labels = other.Stamp(map[string]string{kubeoceanv1alpha1.LabelPodToken: "true"})

	for _, tt := range []struct {
		scope         informers.Scope
		token, copied bool
	}{
		{scope: tokenSecretsScope(owner, "mount"), token: true},
		{scope: boundSecretsScope(owner, "mount"), copied: true},
	} {
		selector, err := labels.Parse(tt.scope.LabelSelector)
		if err != nil {
			t.Fatalf("%s: %v", tt.scope.SlimName, err)
		}
		for what, pair := range map[string]struct {
			secret *corev1.Secret
			want   bool
		}{"token Secret": {token, tt.token}, "copy": {copied, tt.copied}, "other binding's token Secret": {othersToken, false}} {
			if got := selector.Matches(labels.Set(pair.secret.Labels)); got != pair.want {
				t.Errorf("scope %q selects the %s: %v, want %v", tt.scope.LabelSelector, what, got, pair.want)
			}
		}
		if tt.scope.Namespace != "mount" {
			t.Errorf("scope %q is for namespace %q", tt.scope.LabelSelector, tt.scope.Namespace)
		}
	}

	kept, err := tokenSecretsScope(owner, "mount").Slim(token.DeepCopy())
	if record, ok := kept.(*podidentity.TokenSecretRecord); err != nil || !ok || record.Keys["token"] != nil || len(record.Keys) != 1 {
		t.Errorf("token Secret cached as %#v (%v), want a record of its keys", kept, err)
	}
	kept, err = boundSecretsScope(owner, "mount").Slim(copied.DeepCopy())
	if err != nil || !equality.Semantic.DeepEqual(kept, copied) {
		t.Errorf("copy cached as %#v (%v), want it whole", kept, err)
	}
}

func TestVirtualPodScopeKeepsPodsOnTheBindingsVirtualNodes(t *testing.T) {
	scope := virtualPodScope("cls-a", nil)
	on := func(node string) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}} }
	for _, node := range []string{
		kubeoceanv1alpha1.VirtualNodeName("cls-a", "node-1"),
		kubeoceanv1alpha1.VirtualNodeName("cls-a", strings.Repeat("n", 100)), // hashed
		kubeoceanv1alpha1.VirtualNodeName("cls-a-b", "node-1"),               // another binding's, checked by the controllers
	} {
		if !scope.KeepPod(on(node)) {
			t.Errorf("a pod on %q is dropped", node)
		}
	}
	for _, node := range []string{"", "worker-1", kubeoceanv1alpha1.VirtualNodeName("cls-b", "node-1"), "vnode-cls-a", "x-vnode-cls-a-node-1"} {
		if scope.KeepPod(on(node)) {
			t.Errorf("a pod on %q is kept", node)
		}
	}
	if virtualPodScope("cls-a", nil).KeepPodName == virtualPodScope("cls-b", nil).KeepPodName {
		t.Error("two bindings' scopes must not share a factory")
	}
}

// TestForeignPodScopeHoldsEveryPodButTheBindingsOwn: the foreign-pod cache
// (capacity, host ports) holds every running pod that is not the binding's
// own, the pods of other bindings included, while the binding's own pods
// are in its bound cache only: each pod is in exactly one of the two, so
// none is counted twice or missed. A legacy pod is in the foreign cache but
// holds nothing until its binding stamps it (then it counts for the others).
func TestForeignPodScopeHoldsEveryPodButTheBindingsOwn(t *testing.T) {
	owner := ownership.Owner{ClusterID: "worker-1", BindingUID: "uid-a"}
	scope, bound := foreignPodScope(owner), boundScope(owner, "mount")
	foreignLabels, err := labels.Parse(scope.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	boundLabels, err := labels.Parse(bound.LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	onNode, err := fields.ParseSelector(scope.FieldSelector)
	if err != nil {
		t.Fatal(err)
	}
	legacy := map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	for _, tt := range []struct {
		name          string
		labels        map[string]string
		foreign, hold bool
	}{
		{"a pod Kubeocean does not run", map[string]string{"app": "web"}, true, true},
		{"a pod without labels", nil, true, true},
		{"another binding's pod", ownership.Owner{ClusterID: "worker-2", BindingUID: "uid-b"}.Stamp(nil), true, true},
		{"another virtual cluster's binding of the same cluster ID", ownership.Owner{ClusterID: "worker-1", BindingUID: "uid-c"}.Stamp(nil), true, true},
		{"a legacy pod", legacy, true, false},
		{"the binding's own pod", owner.Stamp(nil), false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := foreignLabels.Matches(labels.Set(tt.labels)); got != tt.foreign {
				t.Fatalf("foreign scope %q selects it: %v, want %v", scope.LabelSelector, got, tt.foreign)
			}
			if inBound := boundLabels.Matches(labels.Set(tt.labels)); inBound == tt.foreign {
				t.Fatalf("in the bound cache %v and in the foreign cache %v: counted twice or missed", inBound, tt.foreign)
			}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "p", Labels: tt.labels},
				Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c"}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			kept, err := scope.Slim(p)
			if usage, ok := kept.(*compact.PodUsage); err != nil || !ok || usage.HoldsResources != tt.hold {
				t.Fatalf("cached as %#v (%v), want a usage record holding resources: %v", kept, err, tt.hold)
			}
		})
	}
	for phase, want := range map[corev1.PodPhase]bool{corev1.PodPending: true, corev1.PodRunning: true, corev1.PodSucceeded: false, corev1.PodFailed: false} {
		if got := onNode.Matches(fields.Set{"spec.nodeName": "node-1", "status.phase": string(phase)}); got != want {
			t.Errorf("a %s pod on a node selected: %v, want %v", phase, got, want)
		}
	}
	if onNode.Matches(fields.Set{"spec.nodeName": "", "status.phase": string(corev1.PodPending)}) {
		t.Error("a pod on no node is selected")
	}
	if scope.String() == foreignPodScope(ownership.Owner{ClusterID: "worker-1", BindingUID: "uid-b"}).String() {
		t.Error("two bindings' foreign scopes must not share a factory")
	}
}
