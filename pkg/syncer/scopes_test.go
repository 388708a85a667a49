package syncer

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/naming"
	"github.com/kubeocean/kubeocean/pkg/syncer/topdown/pod"
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

// The cache keeps a token Secret's keys, which tell whether it serves its
// pod, and none of its values; other Secrets (copies) are kept whole.
func TestDropTokenValues(t *testing.T) {
	token := &corev1.Secret{Data: map[string][]byte{"token": []byte("t"), "ca.crt": []byte("ca")}}
	token.Labels = map[string]string{pod.LabelPodToken: "true"}
	copied := &corev1.Secret{Data: map[string][]byte{"password": []byte("p")}}
	for _, s := range []*corev1.Secret{token, copied} {
		if _, err := dropTokenValues(s); err != nil {
			t.Fatal(err)
		}
	}
	if len(token.Data) != 2 || token.Data["token"] != nil || token.Data["ca.crt"] != nil {
		t.Errorf("token Secret cached with %q, want its two keys without values", token.Data)
	}
	if string(copied.Data["password"]) != "p" {
		t.Errorf("copied Secret cached with %q, want it whole", copied.Data)
	}
	other := &corev1.Secret{Data: map[string][]byte{strings.Clone("token"): []byte("u")}}
	other.Labels = map[string]string{strings.Clone(pod.LabelPodToken): strings.Clone("true")}
	if _, err := dropTokenValues(other); err != nil {
		t.Fatal(err)
	}
	for key := range other.Data {
		for mine := range token.Data {
			if mine == key && !sameMemory(mine, key) {
				t.Error("the key two token Secrets have in common is not shared")
			}
		}
	}
	if !sameMemory(other.Labels[pod.LabelPodToken], token.Labels[pod.LabelPodToken]) {
		t.Error("the label two token Secrets have in common is not shared")
	}
	third := &corev1.Secret{Data: map[string][]byte{strings.Clone("ca.crt"): []byte("ca2"), strings.Clone("token"): []byte("t2")}}
	third.Labels = map[string]string{strings.Clone(pod.LabelPodToken): strings.Clone("true")}
	if _, err := dropTokenValues(third); err != nil {
		t.Fatal(err)
	}
	if !sameMap(third.Data, token.Data) || !sameMap(third.Labels, token.Labels) {
		t.Error("the keys or labels of two token Secrets that have the same are not one map")
	}
	if sameMap(other.Data, token.Data) {
		t.Error("token Secrets with different keys share their keys")
	}
}

func TestVirtualPodScopeKeepsPodsOnTheBindingsVirtualNodes(t *testing.T) {
	scope := virtualPodScope("cls-a", nil)
	on := func(node string) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}} }
	for _, node := range []string{
		naming.VirtualNodeName("cls-a", "node-1"),
		naming.VirtualNodeName("cls-a", strings.Repeat("n", 100)), // hashed
		naming.VirtualNodeName("cls-a-b", "node-1"),               // another binding's, checked by the controllers
	} {
		if !scope.KeepPod(on(node)) {
			t.Errorf("a pod on %q is dropped", node)
		}
	}
	for _, node := range []string{"", "worker-1", naming.VirtualNodeName("cls-b", "node-1"), "vnode-cls-a", "x-vnode-cls-a-node-1"} {
		if scope.KeepPod(on(node)) {
			t.Errorf("a pod on %q is kept", node)
		}
	}
	if virtualPodScope("cls-a", nil).KeepPodName == virtualPodScope("cls-b", nil).KeepPodName {
		t.Error("two bindings' scopes must not share a factory")
	}
}
