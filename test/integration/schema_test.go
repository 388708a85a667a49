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
			want: []string{"spec.timeWindows[0].days[1]", `Unsupported value: "funday"`, `"monday"`}},
		{name: "capitalised day", mutate: func(s map[string]any) { window(s)["days"] = []any{"Monday"} },
			want: []string{"spec.timeWindows[0].days[0]", `Unsupported value: "Monday"`}},
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
