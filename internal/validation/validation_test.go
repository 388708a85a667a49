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

package validation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func validBinding() kubeoceanv1alpha1.ClusterBindingSpec {
	return kubeoceanv1alpha1.ClusterBindingSpec{
		ClusterID:         "cls-a1",
		SecretRef:         kubeoceanv1alpha1.SecretReference{Name: "worker-kubeconfig", Namespace: "kubeocean-system"},
		MountNamespace:    "kubeocean-worker",
		ServiceNamespaces: []string{"default"},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"idle"}}},
		}}},
	}
}

func validPolicy() kubeoceanv1alpha1.ResourceLeasingPolicySpec {
	return kubeoceanv1alpha1.ResourceLeasingPolicySpec{
		Cluster:     "worker-1",
		TimeZone:    "Europe/Berlin",
		TimeWindows: []kubeoceanv1alpha1.TimeWindow{{Start: "22:00", End: "06:00", Days: []kubeoceanv1alpha1.DayOfWeek{"friday"}}},
		ResourceLimits: []kubeoceanv1alpha1.ResourceLimit{
			{Resource: corev1.ResourceCPU, Quantity: ptr.To(resource.MustParse("4"))},
			{Resource: corev1.ResourceMemory, Percent: ptr.To[int32](50)},
		},
	}
}

// wantFields asserts that errs name exactly the given field paths.
func wantFields(t *testing.T, errs field.ErrorList, fields ...string) {
	t.Helper()
	var got []string
	for _, err := range errs {
		got = append(got, err.Field)
	}
	if strings.Join(got, ",") != strings.Join(fields, ",") {
		t.Fatalf("errors on %v, want on %v: %v", got, fields, errs.ToAggregate())
	}
}

func TestClusterBindingSpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kubeoceanv1alpha1.ClusterBindingSpec)
		fields []string
	}{
		{name: "valid", mutate: func(*kubeoceanv1alpha1.ClusterBindingSpec) {}},
		{name: "clusterID missing", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.ClusterID = "" },
			fields: []string{"spec.clusterID"}},
		{name: "clusterID too long", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.ClusterID = strings.Repeat("a", 25) },
			fields: []string{"spec.clusterID"}},
		{name: "clusterID not a DNS label", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.ClusterID = "Cls_1" },
			fields: []string{"spec.clusterID"}},
		{name: "mountNamespace missing", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.MountNamespace = "" },
			fields: []string{"spec.mountNamespace"}},
		{name: "mountNamespace invalid", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.MountNamespace = "-ns" },
			fields: []string{"spec.mountNamespace"}},
		{name: "secretRef empty", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.SecretRef = kubeoceanv1alpha1.SecretReference{} },
			fields: []string{"spec.secretRef.name", "spec.secretRef.namespace"}},
		{name: "empty service namespace", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) { s.ServiceNamespaces = []string{"a", ""} },
			fields: []string{"spec.serviceNamespaces[1]"}},
		{name: "bad selector operator", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0].Operator = "Like"
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator"}},
		{name: "In without values", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0].Values = nil
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values"}},
		// What the syncer's parser rejects, validation rejects: a typo here
		// once made every node of the binding look unselected.
		{name: "value with a space", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"gpu pool"}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]"}},
		{name: "Gt not an integer", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0] = corev1.NodeSelectorRequirement{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"big"}}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]"}},
		{name: "Lt negative is not a label value", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0] = corev1.NodeSelectorRequirement{Key: "cores", Operator: corev1.NodeSelectorOpLt, Values: []string{"-4"}}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]"}},
		{name: "Gt integer", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0] = corev1.NodeSelectorRequirement{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"16"}}
		}},
		{name: "Gt beyond int64", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchExpressions[0] = corev1.NodeSelectorRequirement{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"9223372036854775808"}}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]"}},
		{name: "match field by node name", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"worker-a"}}}
		}},
		{name: "match field other than the node name", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchFields = []corev1.NodeSelectorRequirement{{Key: "spec.unschedulable", Operator: corev1.NodeSelectorOpIn, Values: []string{"false"}}}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key"}},
		{name: "match field with two values", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].values"}},
		{name: "match field Exists", mutate: func(s *kubeoceanv1alpha1.ClusterBindingSpec) {
			s.NodeSelector.NodeSelectorTerms[0].MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpExists}}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].operator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := validBinding()
			tt.mutate(&spec)
			wantFields(t, ClusterBindingSpec(&spec), tt.fields...)
		})
	}
}

func TestResourceLeasingPolicySpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*kubeoceanv1alpha1.ResourceLeasingPolicySpec)
		fields []string
	}{
		{name: "valid", mutate: func(*kubeoceanv1alpha1.ResourceLeasingPolicySpec) {}},
		{name: "no windows, no zone, no limits", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.TimeWindows, s.TimeZone, s.ResourceLimits = nil, "", nil
		}},
		{name: "cluster missing", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) { s.Cluster = "" },
			fields: []string{"spec.cluster"}},
		{name: "time zone typo", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) { s.TimeZone = "Europe/Berln" },
			fields: []string{"spec.timeZone"}},
		{name: "policy selector typo", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu pool"}}},
			}}}
		}, fields: []string{"spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]"}},
		{name: "unknown time zone", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) { s.TimeZone = "Europe/Atlantis" },
			fields: []string{"spec.timeZone"}},
		{name: "bad window times", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.TimeWindows[0].Start, s.TimeWindows[0].End = "24:00", "7:00"
		}, fields: []string{"spec.timeWindows[0].start", "spec.timeWindows[0].end"}},
		{name: "day names in any case", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.TimeWindows[0].Days = []kubeoceanv1alpha1.DayOfWeek{"friday", "Saturday", "SUNDAY", "mOnDaY"}
		}},
		{name: "bad day", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.TimeWindows[0].Days = []kubeoceanv1alpha1.DayOfWeek{"friday", "Fri"}
		}, fields: []string{"spec.timeWindows[0].days[1]"}},
		// Only ASCII letters fold, as in the CRD's CEL rule: the long s
		// (U+017F) folds to "s" under Unicode rules but is no day name.
		{name: "non-ASCII look-alike day", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.TimeWindows[0].Days = []kubeoceanv1alpha1.DayOfWeek{"\u017fUNDAY"}
		}, fields: []string{"spec.timeWindows[0].days[0]"}},
		{name: "limit without quantity or percent", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.ResourceLimits[0].Quantity = nil
		}, fields: []string{"spec.resourceLimits[0]"}},
		{name: "percent over 100", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.ResourceLimits[1].Percent = ptr.To[int32](101)
		}, fields: []string{"spec.resourceLimits[1].percent"}},
		{name: "negative quantity", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.ResourceLimits[0].Quantity = ptr.To(resource.MustParse("-1"))
		}, fields: []string{"spec.resourceLimits[0].quantity"}},
		{name: "duplicate resource", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.ResourceLimits[1].Resource = corev1.ResourceCPU
		}, fields: []string{"spec.resourceLimits[1].resource"}},
		{name: "negative reclaim period", mutate: func(s *kubeoceanv1alpha1.ResourceLeasingPolicySpec) {
			s.GracefulReclaimPeriodSeconds = -1
		}, fields: []string{"spec.gracefulReclaimPeriodSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := validPolicy()
			tt.mutate(&spec)
			wantFields(t, ResourceLeasingPolicySpec(&spec), tt.fields...)
		})
	}
}
