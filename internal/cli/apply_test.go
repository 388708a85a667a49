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
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubetesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// fakeKinds are the kinds bind writes, with their scope.
var fakeKinds = map[schema.GroupVersionKind]meta.RESTScope{
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}:                 meta.RESTScopeRoot,
	{Version: "v1", Kind: "Namespace"}:                                                               meta.RESTScopeRoot,
	{Version: "v1", Kind: "ServiceAccount"}:                                                          meta.RESTScopeNamespace,
	{Version: "v1", Kind: "ResourceQuota"}:                                                           meta.RESTScopeNamespace,
	{Version: "v1", Kind: "LimitRange"}:                                                              meta.RESTScopeNamespace,
	{Version: "v1", Kind: "Secret"}:                                                                  meta.RESTScopeNamespace,
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}:                         meta.RESTScopeRoot,
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"}:                  meta.RESTScopeRoot,
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}:                         meta.RESTScopeNamespace,
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:                                meta.RESTScopeNamespace,
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "PriorityLevelConfiguration"}:       meta.RESTScopeRoot,
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Kind: "FlowSchema"}:                       meta.RESTScopeRoot,
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"}:        meta.RESTScopeRoot,
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicyBinding"}: meta.RESTScopeRoot,
	{Group: "kubeocean.io", Version: "v1alpha1", Kind: "ClusterBinding"}:                             meta.RESTScopeRoot,
	{Group: "kubeocean.io", Version: "v1alpha1", Kind: "ResourceLeasingPolicy"}:                      meta.RESTScopeRoot,
}

// fakeApplier is an applier on a fake dynamic client holding objects.
func fakeApplier(t *testing.T, dryRun bool, out *bytes.Buffer, objects ...*unstructured.Unstructured) (*applier, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	listKinds := map[schema.GroupVersionResource]string{}
	for gvk, scope := range fakeKinds {
		mapper.Add(gvk, scope)
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		listKinds[plural] = gvk.Kind + "List"
	}
	objs := make([]runtime.Object, len(objects))
	for i, o := range objects {
		objs[i] = o
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, objs...)
	return &applier{cluster: "physical", dynamic: dyn, mapper: mapper, dryRun: dryRun, out: out}, dyn
}

func shippedObject(t *testing.T, objects []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objects {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj.DeepCopy()
		}
	}
	t.Fatalf("no %s %s among the physical objects", kind, name)
	return nil
}

// What an administrator changed stays, and is reported; what matches or
// holds more than bind sets (server defaults, extra labels) is unchanged;
// what is missing is created. Nothing existing is written.
func TestApplierLeavesExistingObjects(t *testing.T) {
	objects, err := (&bindOptions{mountNamespace: "kubeocean-w1"}).physicalObjects()
	if err != nil {
		t.Fatal(err)
	}
	restricted := shippedObject(t, objects, "Namespace", "kubeocean-w1")
	_ = unstructured.SetNestedField(restricted.Object, "restricted", "metadata", "labels", "pod-security.kubernetes.io/enforce")
	_ = unstructured.SetNestedField(restricted.Object, "kubeocean-w1", "metadata", "labels", "kubernetes.io/metadata.name")
	role := shippedObject(t, objects, "ClusterRole", "kubeocean-syncer:kubeocean-w1")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	_ = unstructured.SetNestedSlice(role.Object, rules[1:], "rules") // the administrator removed the node rule
	sa := shippedObject(t, objects, "ServiceAccount", "kubeocean-syncer")
	sa.SetUID("uid-1") // what the API server adds
	_ = unstructured.SetNestedField(sa.Object, "2026-01-01T00:00:00Z", "metadata", "creationTimestamp")

	var out bytes.Buffer
	a, dyn := fakeApplier(t, false, &out, restricted, role, sa)
	if err := a.ensure(context.Background(), objects...); err != nil {
		t.Fatal(err)
	}
	for _, action := range dyn.Actions() {
		if action.GetVerb() != "get" && action.GetVerb() != "create" {
			t.Errorf("an existing object was written: %s %s", action.GetVerb(), action.GetResource().Resource)
		}
		if c, ok := action.(kubetesting.CreateAction); ok {
			name := c.GetObject().(*unstructured.Unstructured).GetName()
			if r := c.GetResource().Resource; r == "namespaces" || r == "clusterroles" && name == role.GetName() || r == "serviceaccounts" {
				t.Errorf("created %s %s, which exists", c.GetResource().Resource, name)
			}
		}
	}
	ns, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(context.Background(), "kubeocean-w1", metav1.GetOptions{})
	if err != nil || ns.GetLabels()["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Fatalf("namespace labels %v (%v)", ns.GetLabels(), err)
	}
	printed := out.String()
	for _, want := range []string{
		`physical cluster: Namespace kubeocean-w1 differs from the shipped version, left as is:`,
		`metadata.labels["pod-security.kubernetes.io/enforce"]: shipped "baseline", here "restricted"`,
		`physical cluster: ClusterRole kubeocean-syncer:kubeocean-w1 differs from the shipped version, left as is:`,
		`rules: shipped item {"apiGroups":[""],"resources":["nodes"],"verbs":["list","watch"]} missing here`,
		`physical cluster: ServiceAccount kubeocean-w1/kubeocean-syncer unchanged`,
		`physical cluster: RoleBinding kubeocean-w1/kubeocean-syncer created`,
		`physical cluster: FlowSchema kubeocean-syncer.kubeocean-w1 created`,
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("missing %q in:\n%s", want, printed)
		}
	}
	if strings.Contains(printed, "kubernetes.io/metadata.name") {
		t.Errorf("a label bind does not set is reported:\n%s", printed)
	}
}

// A dry run writes nothing and shows an existing object's changed label
// as a diff, a missing object as all added.
func TestApplierDryRunDiff(t *testing.T) {
	objects, err := (&bindOptions{mountNamespace: "kubeocean-w1"}).physicalObjects()
	if err != nil {
		t.Fatal(err)
	}
	restricted := shippedObject(t, objects, "Namespace", "kubeocean-w1")
	_ = unstructured.SetNestedField(restricted.Object, "restricted", "metadata", "labels", "pod-security.kubernetes.io/enforce")
	var out bytes.Buffer
	a, dyn := fakeApplier(t, true, &out, restricted)
	if err := a.ensure(context.Background(), objects...); err != nil {
		t.Fatal(err)
	}
	for _, action := range dyn.Actions() {
		if action.GetVerb() != "get" {
			t.Errorf("the dry run wrote: %s %s", action.GetVerb(), action.GetResource().Resource)
		}
	}
	printed := out.String()
	for _, want := range []string{
		"physical cluster: Namespace kubeocean-w1 differs from the shipped version, would be left as is\n" +
			"    --- physical cluster: kubeocean-w1\n    +++ bind: kubeocean-w1\n",
		"    -    pod-security.kubernetes.io/enforce: restricted\n    +    pod-security.kubernetes.io/enforce: baseline\n",
		"physical cluster: ServiceAccount kubeocean-w1/kubeocean-syncer would be created\n    --- /dev/null\n",
		"    +kind: ServiceAccount\n",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("missing %q in:\n%s", want, printed)
		}
	}
}

func TestDryRunRedactsSecrets(t *testing.T) {
	secret, err := toUnstructured(&corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "n"}, Data: map[string][]byte{"kubeconfig": []byte("token: hunter2")}})
	if err != nil {
		t.Fatal(err)
	}
	existing := secret.DeepCopy()
	_ = unstructured.SetNestedField(existing.Object, "b2xkIHRva2Vu", "data", "kubeconfig")
	_ = unstructured.SetNestedField(existing.Object, "v1", "metadata", "labels", "changed")
	secret.SetLabels(map[string]string{"changed": "v2"})
	var out bytes.Buffer
	a, _ := fakeApplier(t, true, &out)
	if err := a.printDiff("new", secret, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.printDiff("existing", secret, existing); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Contains(s, "hunter2") || strings.Contains(s, "dG9rZW4") || strings.Contains(s, "b2xkIHRva2Vu") ||
		!strings.Contains(s, "+  kubeconfig: <redacted>") || !strings.Contains(s, "-    changed: v1\n    +    changed: v2") {
		t.Fatalf("dry run printed:\n%s", s)
	}
}

func TestDifferences(t *testing.T) {
	parse := func(s string) map[string]any {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	shipped := `
metadata: {name: r, labels: {a: "1"}}
spec: {shares: 30, list: [x, y], hard: {pods: "10000"}}
rules: [{verbs: [get], resources: [pods]}, {verbs: [list], resources: [nodes]}]`
	for _, tc := range []struct {
		name, cluster string
		want          []string
	}{
		{"defaults and extra keys", `
metadata: {name: r, uid: u, labels: {a: "1", b: "2"}}
spec: {shares: 30.0, extra: true, list: [y, x], hard: {pods: 10k}}
rules: [{verbs: [list], resources: [nodes], apiGroups: [""]}, {verbs: [get], resources: [pods]}]`, nil},
		{"label changed", `
metadata: {name: r, labels: {a: "2"}}
spec: {shares: 30, list: [x, y], hard: {pods: "10001"}}
rules: [{verbs: [get], resources: [pods]}, {verbs: [list], resources: [nodes]}]`, []string{`metadata.labels.a: shipped "1", here "2"`, `spec.hard.pods: shipped "10000", here "10001"`}},
		{"rule removed, item added", `
metadata: {name: r, labels: {a: "1"}}
spec: {shares: 30, list: [x, y, z], hard: {pods: "10000"}}
rules: [{verbs: [get], resources: [pods]}]`, []string{
			`rules: shipped item {"resources":["nodes"],"verbs":["list"]} missing here`,
			`spec.list: 1 item(s) here that are not shipped`}},
		{"field gone", `
metadata: {name: r}
spec: {list: [x, y], hard: {pods: "10k"}}
rules: [{verbs: [get], resources: [pods]}, {verbs: [list], resources: [nodes]}]`, []string{
			`metadata.labels.a: shipped "1", absent here`, `spec.shares: shipped 30, absent here`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := differences(parse(shipped), parse(tc.cluster))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestUnifiedDiff(t *testing.T) {
	from := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"
	to := "a\nb\nc\nD\ne\nf\ng\nh\ni\nj\nk\nl\n"
	want := `--- old
+++ new
@@ -1,7 +1,7 @@
 a
 b
 c
-d
+D
 e
 f
 g
@@ -9,3 +9,4 @@
 i
 j
 k
+l
`
	if got := unifiedDiff("old", "new", from, to); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if got := unifiedDiff("old", "new", from, from); got != "" {
		t.Errorf("equal texts: %q", got)
	}
	if got := unifiedDiff("/dev/null", "new", "", "x\n"); got != "--- /dev/null\n+++ new\n@@ -0,0 +1,1 @@\n+x\n" {
		t.Errorf("all added: %q", got)
	}
}
