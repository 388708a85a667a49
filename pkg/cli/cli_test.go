package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

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
}

// The physical objects are the shipped ones, with the mount namespace
// renamed and without the long-lived token Secret.
func TestPhysicalObjects(t *testing.T) {
	o := bindOptions{mountNamespace: "kubeocean-w1"}
	objects, err := o.physicalObjects()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, obj := range objects {
		kinds[obj.GetKind()] = true
		if obj.GetName() == shippedMountNamespace || obj.GetNamespace() == shippedMountNamespace {
			t.Errorf("%s %s/%s still names the shipped mount namespace", obj.GetKind(), obj.GetNamespace(), obj.GetName())
		}
		if obj.GetKind() == "Secret" {
			t.Errorf("the long-lived token Secret %s is applied", obj.GetName())
		}
	}
	for _, kind := range []string{"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "RoleBinding"} {
		if !kinds[kind] {
			t.Errorf("no %s among %v", kind, kinds)
		}
	}
	found := false
	for _, obj := range objects {
		found = found || (obj.GetKind() == "RoleBinding" && obj.GetNamespace() == "kubeocean-w1")
	}
	if !found {
		t.Error("no RoleBinding in the binding's mount namespace")
	}
	named := false
	for _, obj := range objects {
		if namesInRules(obj, shippedMountNamespace) {
			t.Errorf("%s %s still names %s in resourceNames", obj.GetKind(), obj.GetName(), shippedMountNamespace)
		}
		named = named || namesInRules(obj, "kubeocean-w1")
	}
	if !named {
		t.Error("no rule names the binding's mount namespace (the syncer watches it by name)")
	}
}

// A second binding to the same physical cluster adds its mount namespace
// to the shared rule that names them, and keeps the first one's.
func TestKeepOtherMountNamespaces(t *testing.T) {
	existing := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubeocean-syncer-mount-namespaces"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{"kubeocean-first"}, Verbs: []string{"list", "watch"}}}}
	physical := &clients{kube: kubefake.NewClientset(existing)}
	objects, err := (&bindOptions{mountNamespace: "kubeocean-second"}).physicalObjects()
	if err != nil {
		t.Fatal(err)
	}
	if err := keepOtherMountNamespaces(context.Background(), physical, objects, "kubeocean-second"); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objects {
		if obj.GetName() != existing.Name || obj.GetKind() != "ClusterRole" {
			continue
		}
		if !namesInRules(obj, "kubeocean-first") || !namesInRules(obj, "kubeocean-second") {
			t.Fatalf("rules %v", obj.Object["rules"])
		}
		return
	}
	t.Fatal("no ClusterRole naming the mount namespaces among the physical objects")
}

func TestDryRunRedactsSecrets(t *testing.T) {
	var out bytes.Buffer
	secret, err := toUnstructured(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n"}, Data: map[string][]byte{"kubeconfig": []byte("token: hunter2")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := newApplier("virtual", nil, true, &out).apply(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "hunter2") || strings.Contains(out.String(), "dG9rZW4") || !strings.Contains(out.String(), "kubeconfig: <redacted>") {
		t.Fatalf("dry run printed:\n%s", out.String())
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
