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

package integration

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// TestKindsAreInTheKubeoceanCategory: `kubectl get kubeocean` lists both
// kinds, as discovery tells it.
func TestKindsAreInTheKubeoceanCategory(t *testing.T) {
	resources, err := discovery.NewDiscoveryClientForConfigOrDie(virtualCluster.Config()).
		ServerResourcesForGroupVersion(kubeoceanv1alpha1.SchemeGroupVersion.String())
	if err != nil {
		t.Fatal(err)
	}
	var inCategory []string
	for _, r := range resources.APIResources {
		if slices.Contains(r.Categories, "kubeocean") {
			inCategory = append(inCategory, r.Name)
		}
	}
	slices.Sort(inCategory)
	if want := []string{"clusterbindings", "resourceleasingpolicies"}; !slices.Equal(inCategory, want) {
		t.Fatalf("resources in category kubeocean: %v, want %v", inCategory, want)
	}
}

// TestKubectlGetKubeocean: what an operator sees with `kubectl get
// kubeocean`: whether a binding works (its Ready reason) and when a policy
// lends (its open window and next transition).
func TestKubectlGetKubeocean(t *testing.T) {
	ctx := t.Context()
	bindings := dynamic.NewForConfigOrDie(virtualCluster.Config()).Resource(bindingsGVR)
	spec := bindingSpec()
	spec["clusterID"] = "cls-columns"
	b, err := bindings.Create(ctx, object("ClusterBinding", "columns", spec), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	b.Object["status"] = map[string]any{
		"phase": "Failed",
		"conditions": []any{
			map[string]any{"type": "Connected", "status": "False", "reason": "Unreachable", "message": "m", "lastTransitionTime": now},
			map[string]any{"type": "Ready", "status": "False", "reason": "KubeconfigInvalid", "message": "m", "lastTransitionTime": now},
		},
	}
	if _, err := bindings.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := virtualCluster.Kubectl(ctx, "get", "kubeocean")
	if err != nil {
		t.Fatal(err)
	}
	assertTable(t, out, []string{"NAME", "CLUSTERID", "PHASE", "READY", "AGE"},
		[]string{"clusterbinding.kubeocean.io/columns", "cls-columns", "Failed", "KubeconfigInvalid"})

	policies := dynamic.NewForConfigOrDie(physicalCluster.Config()).Resource(policiesGVR)
	p, err := policies.Create(ctx, object("ResourceLeasingPolicy", "columns", policySpec()), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	next := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	p.Object["status"] = map[string]any{
		"phase":              "Active",
		"activeTimeWindow":   map[string]any{"start": "22:00", "end": "06:00", "days": []any{"friday"}},
		"nextTransitionTime": next,
	}
	if _, err := policies.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err = physicalCluster.Kubectl(ctx, "get", "kubeocean")
	if err != nil {
		t.Fatal(err)
	}
	assertTable(t, out, []string{"NAME", "CLUSTER", "PHASE", "WINDOW START", "WINDOW END", "NEXT TRANSITION", "AGE"},
		[]string{"resourceleasingpolicy.kubeocean.io/columns", "worker-1", "Active", "22:00", "06:00", next})
}

// assertTable checks that kubectl's output has the header columns and a row
// with the cells, in order.
func assertTable(t *testing.T, out string, header, cells []string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	var headerLine string
	for _, l := range lines {
		if strings.HasPrefix(l, "NAME") && strings.Contains(l, header[1]) {
			headerLine = l
		}
	}
	if !containsInOrder(headerLine, header) {
		t.Errorf("header %q lacks the columns %v, in order\n%s", headerLine, header, out)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, cells[0]+" ") {
			if !containsInOrder(l, cells) {
				t.Errorf("row %q lacks %v, in order\n%s", l, cells, out)
			}
			return
		}
	}
	t.Errorf("no row for %s in:\n%s", cells[0], out)
}

func containsInOrder(line string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(line, p)
		if i < 0 {
			return false
		}
		line = line[i+len(p):]
	}
	return true
}
