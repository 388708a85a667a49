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
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/timewindow"
)

// MaxClusterIDLength keeps every name derived from a cluster ID within the
// limits of Kubernetes names.
const MaxClusterIDLength = 24

// ClusterBindingSpec validates a ClusterBinding spec.
func ClusterBindingSpec(spec *kubeoceanv1alpha1.ClusterBindingSpec) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec")

	errs = append(errs, dnsLabel(path.Child("clusterID"), spec.ClusterID, MaxClusterIDLength)...)
	errs = append(errs, dnsLabel(path.Child("mountNamespace"), spec.MountNamespace, validation.DNS1123LabelMaxLength)...)

	ref := path.Child("secretRef")
	if spec.SecretRef.Name == "" {
		errs = append(errs, field.Required(ref.Child("name"), "the kubeconfig Secret's name is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(spec.SecretRef.Name) {
			errs = append(errs, field.Invalid(ref.Child("name"), spec.SecretRef.Name, msg))
		}
	}
	errs = append(errs, dnsLabel(ref.Child("namespace"), spec.SecretRef.Namespace, validation.DNS1123LabelMaxLength)...)

	for i, ns := range spec.ServiceNamespaces {
		errs = append(errs, dnsLabel(path.Child("serviceNamespaces").Index(i), ns, validation.DNS1123LabelMaxLength)...)
	}
	errs = append(errs, NodeSelector(path.Child("nodeSelector"), spec.NodeSelector)...)
	return errs
}

// ResourceLeasingPolicySpec validates a ResourceLeasingPolicy spec,
// including what the schema cannot check: that the time zone exists.
func ResourceLeasingPolicySpec(spec *kubeoceanv1alpha1.ResourceLeasingPolicySpec) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec")

	if spec.Cluster == "" {
		errs = append(errs, field.Required(path.Child("cluster"), "the ClusterBinding name is required"))
	}
	errs = append(errs, NodeSelector(path.Child("nodeSelector"), spec.NodeSelector)...)
	errs = append(errs, TimeZone(path.Child("timeZone"), spec.TimeZone)...)
	for i, w := range spec.TimeWindows {
		errs = append(errs, timeWindow(path.Child("timeWindows").Index(i), w)...)
	}
	seen := map[corev1.ResourceName]bool{}
	for i, limit := range spec.ResourceLimits {
		p := path.Child("resourceLimits").Index(i)
		if seen[limit.Resource] {
			errs = append(errs, field.Duplicate(p.Child("resource"), limit.Resource))
		}
		seen[limit.Resource] = true
		errs = append(errs, resourceLimit(p, limit)...)
	}
	if spec.GracefulReclaimPeriodSeconds < 0 {
		errs = append(errs, field.Invalid(path.Child("gracefulReclaimPeriodSeconds"), spec.GracefulReclaimPeriodSeconds, "must not be negative"))
	}
	return errs
}

func dnsLabel(path *field.Path, value string, maxLength int) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	var errs field.ErrorList
	if len(value) > maxLength {
		errs = append(errs, field.TooLong(path, value, maxLength))
	}
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(path, value, msg))
	}
	return errs
}

// NodeSelector validates a node selector of a binding or a policy. It
// accepts exactly what the syncer can evaluate: what
// k8s.io/component-helpers nodeaffinity.NewNodeSelector parses (label keys
// and values, one integer for Gt and Lt), and, for match fields, the one
// field a node selector can match (metadata.name), since any other field
// would silently select nothing.
func NodeSelector(path *field.Path, selector *corev1.NodeSelector) field.ErrorList {
	if selector == nil {
		return nil
	}
	var errs field.ErrorList
	for i, term := range selector.NodeSelectorTerms {
		termPath := path.Child("nodeSelectorTerms").Index(i)
		for j, req := range term.MatchExpressions {
			errs = append(errs, labelRequirement(termPath.Child("matchExpressions").Index(j), req)...)
		}
		for j, req := range term.MatchFields {
			errs = append(errs, fieldRequirement(termPath.Child("matchFields").Index(j), req)...)
		}
	}
	return errs
}

// nodeNameField is the only field a node selector can match.
const nodeNameField = "metadata.name"

func labelRequirement(path *field.Path, req corev1.NodeSelectorRequirement) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(req.Key) {
		errs = append(errs, field.Invalid(path.Child("key"), req.Key, msg))
	}
	values := path.Child("values")
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(values, fmt.Sprintf("operator %s needs at least one value", req.Operator)))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			errs = append(errs, field.Forbidden(values, fmt.Sprintf("operator %s takes no values", req.Operator)))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(values, fmt.Sprintf("operator %s needs exactly one value", req.Operator)))
		}
		for i, v := range req.Values {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil {
				errs = append(errs, field.Invalid(values.Index(i), v, fmt.Sprintf("operator %s compares integers: the value must be a decimal integer", req.Operator)))
			}
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), req.Operator, []corev1.NodeSelectorOperator{
			corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn, corev1.NodeSelectorOpExists,
			corev1.NodeSelectorOpDoesNotExist, corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt,
		}))
	}
	// Every value is compared with a label value, so it must be one.
	for i, v := range req.Values {
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(values.Index(i), v, msg))
		}
	}
	return errs
}

func fieldRequirement(path *field.Path, req corev1.NodeSelectorRequirement) field.ErrorList {
	var errs field.ErrorList
	if req.Key != nodeNameField {
		errs = append(errs, field.NotSupported(path.Child("key"), req.Key, []string{nodeNameField}))
	}
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) != 1 {
			errs = append(errs, field.Invalid(path.Child("values"), req.Values, "must have exactly one element"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("operator"), req.Operator, []corev1.NodeSelectorOperator{
			corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn,
		}))
	}
	return errs
}

// TimeZone validates an IANA time zone name as the syncer loads it.
func TimeZone(path *field.Path, timeZone string) field.ErrorList {
	if _, err := timewindow.LoadLocation(timeZone); err != nil {
		return field.ErrorList{field.Invalid(path, timeZone, "not a known IANA time zone")}
	}
	return nil
}

func timeWindow(path *field.Path, w kubeoceanv1alpha1.TimeWindow) field.ErrorList {
	var errs field.ErrorList
	if _, err := timewindow.ParseClock(w.Start); err != nil {
		errs = append(errs, field.Invalid(path.Child("start"), w.Start, "must be a time of day HH:MM between 00:00 and 23:59"))
	}
	if _, err := timewindow.ParseClock(w.End); err != nil {
		errs = append(errs, field.Invalid(path.Child("end"), w.End, "must be a time of day HH:MM between 00:00 and 23:59"))
	}
	for i, day := range w.Days {
		if _, ok := timewindow.ParseDay(day); !ok {
			errs = append(errs, field.NotSupported(path.Child("days").Index(i), day, []kubeoceanv1alpha1.DayOfWeek{
				kubeoceanv1alpha1.Monday, kubeoceanv1alpha1.Tuesday, kubeoceanv1alpha1.Wednesday, kubeoceanv1alpha1.Thursday,
				kubeoceanv1alpha1.Friday, kubeoceanv1alpha1.Saturday, kubeoceanv1alpha1.Sunday,
			}))
		}
	}
	return errs
}

func resourceLimit(path *field.Path, limit kubeoceanv1alpha1.ResourceLimit) field.ErrorList {
	var errs field.ErrorList
	if limit.Resource == "" {
		errs = append(errs, field.Required(path.Child("resource"), ""))
	}
	if limit.Quantity == nil && limit.Percent == nil {
		errs = append(errs, field.Required(path, "each resource limit needs a quantity or a percent"))
	}
	if limit.Quantity != nil && limit.Quantity.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(path.Child("quantity"), limit.Quantity.String(), "must not be negative"))
	}
	if limit.Percent != nil && (*limit.Percent < 0 || *limit.Percent > 100) {
		errs = append(errs, field.Invalid(path.Child("percent"), *limit.Percent, "must be between 0 and 100"))
	}
	return errs
}
