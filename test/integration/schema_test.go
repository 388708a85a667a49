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
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
)

func bindingSpec() map[string]any {
	return map[string]any{
		"clusterID":         "cls-schema",
		"secretRef":         map[string]any{"name": "worker-kubeconfig", "namespace": "kubeocean-system"},
		"mountNamespace":    "kubeocean-worker",
		"serviceNamespaces": []any{"default"},
	}
}

func policySpec() map[string]any {
	return map[string]any{
		"cluster":     "worker-1",
		"timeZone":    "Asia/Shanghai",
		"timeWindows": []any{map[string]any{"start": "22:00", "end": "06:00", "days": []any{"friday", "saturday"}}},
		"resourceLimits": []any{
			map[string]any{"resource": "cpu", "quantity": "4"},
			map[string]any{"resource": "memory", "percent": int64(50)},
		},
		"forceReclaim":                 true,
		"gracefulReclaimPeriodSeconds": int64(300),
	}
}

// TestSchemaRejectsBadClusterBindings shows that `kubectl apply` of each
// kind of bad ClusterBinding fails with a message naming the problem.
func TestSchemaRejectsBadClusterBindings(t *testing.T) {
	client := dynamic.NewForConfigOrDie(virtualCluster.Config())
	tests := []struct {
		name   string
		mutate func(spec map[string]any)
		want   []string
	}{
		{name: "clusterID not a DNS label", mutate: func(s map[string]any) { s["clusterID"] = "Cluster_1" },
			want: []string{"spec.clusterID", "clusterID must be a DNS label"}},
		{name: "clusterID longer than 24", mutate: func(s map[string]any) { s["clusterID"] = strings.Repeat("a", 25) },
			want: []string{"spec.clusterID", "Too long", "24"}},
		{name: "clusterID missing", mutate: func(s map[string]any) { delete(s, "clusterID") },
			want: []string{"spec.clusterID: Required value"}},
		{name: "mountNamespace missing", mutate: func(s map[string]any) { delete(s, "mountNamespace") },
			want: []string{"spec.mountNamespace: Required value"}},
		{name: "mountNamespace not a namespace name", mutate: func(s map[string]any) { s["mountNamespace"] = "Team.A" },
			want: []string{"spec.mountNamespace", "mountNamespace must be a valid namespace name"}},
		{name: "secretRef missing", mutate: func(s map[string]any) { delete(s, "secretRef") },
			want: []string{"spec.secretRef: Required value"}},
		{name: "secretRef without name and namespace", mutate: func(s map[string]any) { s["secretRef"] = map[string]any{} },
			want: []string{"spec.secretRef.name: Required value", "spec.secretRef.namespace: Required value"}},
		{name: "empty serviceNamespaces item", mutate: func(s map[string]any) { s["serviceNamespaces"] = []any{"default", ""} },
			want: []string{"spec.serviceNamespaces", "serviceNamespaces must not contain empty names"}},
		{name: "empty joinedWith item", mutate: func(s map[string]any) { s["network"] = map[string]any{"joinedWith": []any{"b", ""}} },
			want: []string{"spec.network.joinedWith", "joinedWith must not contain empty names"}},
		// The self check is the test's index: this is the 10th case.
		{name: "joinedWith names the binding", mutate: func(s map[string]any) { s["network"] = map[string]any{"joinedWith": []any{"b", "bad-binding-9"}} },
			want: []string{"spec.network.joinedWith must not name the binding itself"}},
	}
	for _, sel := range badSelectors() {
		tests = append(tests, struct {
			name   string
			mutate func(spec map[string]any)
			want   []string
		}{name: "selector " + sel.name, mutate: func(s map[string]any) { s["nodeSelector"] = sel.selector }, want: sel.want})
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := bindingSpec()
			tt.mutate(spec)
			createRejected(t, client, bindingsGVR, object("ClusterBinding", fmt.Sprintf("bad-binding-%d", i), spec), tt.want...)
		})
	}
}

func TestClusterIDIsImmutable(t *testing.T) {
	client := dynamic.NewForConfigOrDie(virtualCluster.Config())
	created, err := client.Resource(bindingsGVR).Create(t.Context(), object("ClusterBinding", "immutable-id", bindingSpec()), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a valid ClusterBinding: %v", err)
	}
	spec := created.Object["spec"].(map[string]any)
	spec["clusterID"] = "cls-other"
	_, err = client.Resource(bindingsGVR).Update(t.Context(), created, metav1.UpdateOptions{})
	assertRejected(t, err, "spec.clusterID", "clusterID is immutable")

	// Other fields stay editable.
	spec["clusterID"] = "cls-schema"
	spec["disableNodeDefaultTaint"] = true
	if _, err := client.Resource(bindingsGVR).Update(t.Context(), created, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating a mutable field: %v", err)
	}
}

// TestMountNamespaceIsImmutable: the pods and copies of a binding live in its
// mount namespace; moving it would strand them there.
func TestMountNamespaceIsImmutable(t *testing.T) {
	client := dynamic.NewForConfigOrDie(virtualCluster.Config())
	spec := bindingSpec()
	spec["clusterID"] = "cls-mount"
	created, err := client.Resource(bindingsGVR).Create(t.Context(), object("ClusterBinding", "immutable-mount", spec), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a valid ClusterBinding: %v", err)
	}
	created.Object["spec"].(map[string]any)["mountNamespace"] = "elsewhere"
	_, err = client.Resource(bindingsGVR).Update(t.Context(), created, metav1.UpdateOptions{})
	assertRejected(t, err, "spec.mountNamespace", "mountNamespace is immutable")
}

// TestSchemaRejectsBadPolicies does the same for ResourceLeasingPolicy.
func TestSchemaRejectsBadPolicies(t *testing.T) {
	client := dynamic.NewForConfigOrDie(physicalCluster.Config())
	window := func(s map[string]any) map[string]any { return s["timeWindows"].([]any)[0].(map[string]any) }
	limit := func(s map[string]any, i int) map[string]any { return s["resourceLimits"].([]any)[i].(map[string]any) }
	tests := []struct {
		name   string
		mutate func(spec map[string]any)
		want   []string
	}{
		{name: "cluster missing", mutate: func(s map[string]any) { delete(s, "cluster") },
			want: []string{"spec.cluster: Required value"}},
		{name: "start hour 24", mutate: func(s map[string]any) { window(s)["start"] = "24:00" },
			want: []string{"spec.timeWindows[0].start", "start must be a time of day HH:MM between 00:00 and 23:59"}},
		{name: "end without leading zero", mutate: func(s map[string]any) { window(s)["end"] = "6:00" },
			want: []string{"spec.timeWindows[0].end", "end must be a time of day HH:MM"}},
		{name: "minutes over 59", mutate: func(s map[string]any) { window(s)["end"] = "06:60" },
			want: []string{"spec.timeWindows[0].end", "end must be a time of day HH:MM"}},
		{name: "unknown day", mutate: func(s map[string]any) { window(s)["days"] = []any{"friday", "funday"} },
			want: []string{"spec.timeWindows[0].days[1]", "days must be English day names (monday to sunday, in any case)"}},
		{name: "empty time zone", mutate: func(s map[string]any) { s["timeZone"] = "" },
			want: []string{"spec.timeZone", "at least 1 chars long"}},
		{name: "limit with neither quantity nor percent", mutate: func(s map[string]any) { delete(limit(s, 0), "quantity") },
			want: []string{"spec.resourceLimits[0]", "each resource limit needs a quantity or a percent"}},
		{name: "percent over 100", mutate: func(s map[string]any) { limit(s, 1)["percent"] = int64(101) },
			want: []string{"spec.resourceLimits[1].percent", "less than or equal to 100"}},
		{name: "negative percent", mutate: func(s map[string]any) { limit(s, 1)["percent"] = int64(-1) },
			want: []string{"spec.resourceLimits[1].percent", "greater than or equal to 0"}},
		{name: "quantity not a quantity", mutate: func(s map[string]any) { limit(s, 0)["quantity"] = "four" },
			want: []string{"spec.resourceLimits[0].quantity"}},
		{name: "the same resource twice", mutate: func(s map[string]any) { limit(s, 1)["resource"] = "cpu" },
			want: []string{"spec.resourceLimits[1]", "Duplicate value"}},
		{name: "negative reclaim period", mutate: func(s map[string]any) { s["gracefulReclaimPeriodSeconds"] = int64(-5) },
			want: []string{"spec.gracefulReclaimPeriodSeconds", "greater than or equal to 0"}},
		{name: "negative quantity", mutate: func(s map[string]any) { limit(s, 0)["quantity"] = "-1" },
			want: []string{"spec.resourceLimits[0].quantity", "quantity must not be negative"}},
		{name: "negative quantity with a suffix", mutate: func(s map[string]any) { limit(s, 0)["quantity"] = "-512Mi" },
			want: []string{"spec.resourceLimits[0].quantity", "quantity must not be negative"}},
		{name: "negative integer quantity", mutate: func(s map[string]any) { limit(s, 0)["quantity"] = int64(-2) },
			want: []string{"spec.resourceLimits[0].quantity", "quantity must not be negative"}},
		{name: "day abbreviation", mutate: func(s map[string]any) { window(s)["days"] = []any{"Fri"} },
			want: []string{"spec.timeWindows[0].days[0]", "days must be English day names (monday to sunday, in any case)"}},
		{name: "time zone with a space", mutate: func(s map[string]any) { s["timeZone"] = "Europe/Berlin " },
			want: []string{"spec.timeZone", "timeZone must be an IANA time zone name"}},
		{name: "time zone as an offset", mutate: func(s map[string]any) { s["timeZone"] = "+02:00" },
			want: []string{"spec.timeZone", "timeZone must be an IANA time zone name"}},
		{name: "time zone as a path", mutate: func(s map[string]any) { s["timeZone"] = "../etc/passwd" },
			want: []string{"spec.timeZone", "timeZone must be an IANA time zone name"}},
		{name: "time zone with a trailing slash", mutate: func(s map[string]any) { s["timeZone"] = "Europe/" },
			want: []string{"spec.timeZone", "timeZone must be an IANA time zone name"}},
	}
	for _, sel := range badSelectors() {
		tests = append(tests, struct {
			name   string
			mutate func(spec map[string]any)
			want   []string
		}{name: "selector " + sel.name, mutate: func(s map[string]any) { s["nodeSelector"] = sel.selector }, want: sel.want})
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := runtime.DeepCopyJSON(policySpec())
			tt.mutate(spec)
			createRejected(t, client, policiesGVR, object("ResourceLeasingPolicy", fmt.Sprintf("bad-policy-%d", i), spec), tt.want...)
		})
	}
}

// TestSchemaAcceptsEdgeValues guards against a schema so strict that valid
// objects are refused.
func TestSchemaAcceptsEdgeValues(t *testing.T) {
	client := dynamic.NewForConfigOrDie(physicalCluster.Config())
	spec := policySpec()
	spec["timeWindows"] = []any{
		map[string]any{"start": "00:00", "end": "23:59"},
		map[string]any{"start": "18:00", "end": "18:00", "days": []any{"sunday"}},
	}
	spec["resourceLimits"] = []any{
		map[string]any{"resource": "nvidia.com/gpu", "percent": int64(0)},
		map[string]any{"resource": "memory", "quantity": "512Mi", "percent": int64(100)},
	}
	delete(spec, "timeZone")
	if _, err := client.Resource(policiesGVR).Create(t.Context(), object("ResourceLeasingPolicy", "edges", spec), metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid policy refused: %v", err)
	}

	bindings := dynamic.NewForConfigOrDie(virtualCluster.Config())
	b := bindingSpec()
	b["clusterID"] = strings.Repeat("a", 24)
	b["nodeSelector"] = map[string]any{"nodeSelectorTerms": []any{map[string]any{
		"matchExpressions": []any{map[string]any{"key": "pool", "operator": "In", "values": []any{"idle"}}},
	}}}
	if _, err := bindings.Resource(bindingsGVR).Create(t.Context(), object("ClusterBinding", "edges", b), metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid binding refused: %v", err)
	}
}

type badSelector struct {
	name     string
	selector map[string]any
	want     []string
}

// expressions is a node selector of one term with the given label
// requirements.
func expressions(requirements ...map[string]any) map[string]any {
	list := make([]any, len(requirements))
	for i, r := range requirements {
		list[i] = r
	}
	return map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": list}}}
}

func requirement(key, operator string, values ...any) map[string]any {
	r := map[string]any{"key": key, "operator": operator}
	if values != nil {
		r["values"] = values
	}
	return r
}

// badSelectors are node selectors that internal/validation.NodeSelector refuses
// (the syncer could not evaluate them), with what admission says of each.
// They apply to the nodeSelector of both kinds.
func badSelectors() []badSelector {
	const expr = "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0]"
	const fields = "spec.nodeSelector.nodeSelectorTerms[0].matchFields[0]"
	return []badSelector{
		{name: "value with a space", selector: expressions(requirement("pool", "In", "gpu pool")),
			want: []string{expr + ".values[0]", "should match", "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"}},
		{name: "value over 63 characters", selector: expressions(requirement("pool", "NotIn", strings.Repeat("a", 64))),
			want: []string{expr + ".values[0]", "Too long", "63"}},
		{name: "value starting with a dash", selector: expressions(requirement("pool", "In", "-idle")),
			want: []string{expr + ".values[0]", "should match"}},
		{name: "In without values", selector: expressions(requirement("pool", "In")),
			want: []string{expr + ".values", "operators In and NotIn need at least one value"}},
		{name: "Exists with values", selector: expressions(requirement("pool", "Exists", "idle")),
			want: []string{expr + ".values", "operators Exists and DoesNotExist take no values"}},
		{name: "Gt with a word", selector: expressions(requirement("cores", "Gt", "big")),
			want: []string{expr + ".values", "operators Gt and Lt need exactly one value, a decimal integer"}},
		{name: "Lt with two values", selector: expressions(requirement("cores", "Lt", "1", "2")),
			want: []string{expr + ".values", "operators Gt and Lt need exactly one value, a decimal integer"}},
		{name: "Gt beyond int64", selector: expressions(requirement("cores", "Gt", "9223372036854775808")),
			want: []string{expr + ".values", "operators Gt and Lt need exactly one value, a decimal integer"}},
		{name: "unknown operator", selector: expressions(requirement("pool", "Like", "idle")),
			want: []string{expr + ".operator", `Unsupported value: "Like"`}},
		{name: "key with a space", selector: expressions(requirement("gpu pool", "Exists")),
			want: []string{expr + ".key", "key must be a label key"}},
		{name: "key with two slashes", selector: expressions(requirement("a/b/c", "Exists")),
			want: []string{expr + ".key", "key must be a label key"}},
		{name: "key name over 63 characters", selector: expressions(requirement("example.com/"+strings.Repeat("k", 64), "Exists")),
			want: []string{expr + ".key", "key must be a label key"}},
		{name: "key prefix over 253 characters", selector: expressions(requirement(strings.Repeat("a.", 127)+"com/pool", "Exists")),
			want: []string{expr + ".key", "key must be a label key"}},
		{name: "field other than metadata.name", selector: map[string]any{"nodeSelectorTerms": []any{map[string]any{
			"matchFields": []any{requirement("spec.unschedulable", "In", "false")}}}},
			want: []string{fields + ".key", "matchFields can only match the field metadata.name"}},
		{name: "field with two names", selector: map[string]any{"nodeSelectorTerms": []any{map[string]any{
			"matchFields": []any{requirement("metadata.name", "In", "node-a", "node-b")}}}},
			want: []string{fields + ".values", "matchFields need exactly one value, a node name"}},
		{name: "field with Exists", selector: map[string]any{"nodeSelectorTerms": []any{map[string]any{
			"matchFields": []any{requirement("metadata.name", "Exists")}}}},
			want: []string{fields + ".operator", `Unsupported value: "Exists"`}},
		{name: "too many terms", selector: map[string]any{"nodeSelectorTerms": func() []any {
			terms := make([]any, 33)
			for i := range terms {
				terms[i] = map[string]any{"matchExpressions": []any{requirement("pool", "Exists")}}
			}
			return terms
		}()}, want: []string{"spec.nodeSelector.nodeSelectorTerms", "Too many", "32"}},
	}
}

// TestClusterBindingNameAtMost63 : the syncer puts the binding's name in
// label values.
func TestClusterBindingNameAtMost63(t *testing.T) {
	client := dynamic.NewForConfigOrDie(virtualCluster.Config())
	spec := bindingSpec()
	spec["clusterID"] = "cls-long-name"
	createRejected(t, client, bindingsGVR, object("ClusterBinding", strings.Repeat("b", 64), spec),
		"metadata.name must be at most 63 characters")
	if _, err := client.Resource(bindingsGVR).Create(t.Context(), object("ClusterBinding", strings.Repeat("b", 63), spec), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a 63-character name refused: %v", err)
	}
}

// TestSchemaAcceptsWhatWorks: each value the Go validation accepts, and that
// the issue reports as refused or at risk, passes admission.
func TestSchemaAcceptsWhatWorks(t *testing.T) {
	policies := dynamic.NewForConfigOrDie(physicalCluster.Config())
	for i, zone := range []string{"UTC", "Etc/GMT+5", "Etc/GMT-14", "America/Argentina/Buenos_Aires", "America/Port-au-Prince", "EST5EDT", "Europe/Berlin"} {
		spec := policySpec()
		spec["timeZone"] = zone
		if _, err := policies.Resource(policiesGVR).Create(t.Context(), object("ResourceLeasingPolicy", fmt.Sprintf("zone-%d", i), spec), metav1.CreateOptions{}); err != nil {
			t.Errorf("time zone %q refused: %v", zone, err)
		}
	}
	spec := policySpec()
	spec["timeWindows"] = []any{map[string]any{"start": "08:00", "end": "18:00", "days": []any{"Monday", "TUESDAY", "wednesday", "thursDay", "Friday"}}}
	spec["resourceLimits"] = []any{
		map[string]any{"resource": "cpu", "quantity": "0"},
		map[string]any{"resource": "memory", "quantity": int64(1 << 30)},
		map[string]any{"resource": "ephemeral-storage", "quantity": "1.5Ti"},
		map[string]any{"resource": "nvidia.com/gpu", "quantity": "+2"},
	}
	spec["nodeSelector"] = goodSelector()
	if _, err := policies.Resource(policiesGVR).Create(t.Context(), object("ResourceLeasingPolicy", "public-style", spec), metav1.CreateOptions{}); err != nil {
		t.Errorf("capitalised days, zero quantities and a 3-term selector refused: %v", err)
	}

	bindings := dynamic.NewForConfigOrDie(virtualCluster.Config())
	b := bindingSpec()
	b["clusterID"] = "cls-selector"
	b["nodeSelector"] = goodSelector()
	if _, err := bindings.Resource(bindingsGVR).Create(t.Context(), object("ClusterBinding", "three-terms", b), metav1.CreateOptions{}); err != nil {
		t.Errorf("a 3-term selector refused: %v", err)
	}
}

// goodSelector has three terms and every operator, at the edges of what is
// valid.
func goodSelector() map[string]any {
	return map[string]any{"nodeSelectorTerms": []any{
		map[string]any{"matchExpressions": []any{
			requirement("example.com/pool", "In", "idle", "batch_2", ""),
			requirement("kubernetes.io/hostname", "NotIn", strings.Repeat("n", 63)),
			requirement(strings.Repeat("a", 63), "Exists"),
		}},
		map[string]any{"matchExpressions": []any{
			requirement("cores", "Gt", "9223372036854775807"),
			requirement("gpus", "Lt", "0008"),
			requirement("drained", "DoesNotExist"),
		}},
		map[string]any{"matchFields": []any{
			requirement("metadata.name", "In", "worker-a"),
			requirement("metadata.name", "NotIn", "worker-b"),
		}},
	}}
}
