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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/capacity"
	"github.com/kubeocean/kubeocean/internal/timewindow"
)

// fuzzRequirement builds a one-requirement selector from fuzz input; count
// picks how many of the two values it carries.
func fuzzRequirement(key, op, v0, v1 string, count uint8) corev1.NodeSelectorRequirement {
	req := corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOperator(op)}
	switch count % 3 {
	case 1:
		req.Values = []string{v0}
	case 2:
		req.Values = []string{v0, v1}
	}
	return req
}

// FuzzNodeSelector: what validation accepts, the syncer's parser
// (nodeaffinity.NewNodeSelector) parses. For label expressions the two agree
// both ways; for fields validation is stricter (only metadata.name can match
// a node, any other field would select nothing).
func FuzzNodeSelector(f *testing.F) {
	f.Add("pool", "In", "idle", "", uint8(1), false)
	f.Add("pool", "In", "gpu pool", "", uint8(1), false)
	f.Add("cores", "Gt", "big", "", uint8(1), false)
	f.Add("cores", "Lt", "-4", "", uint8(1), false)
	f.Add("example.com/lendable", "Exists", "", "", uint8(0), false)
	f.Add("metadata.name", "In", "worker-a", "", uint8(1), true)
	f.Fuzz(func(t *testing.T, key, op, v0, v1 string, count uint8, asField bool) {
		req := fuzzRequirement(key, op, v0, v1, count)
		term := corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{req}}
		if asField {
			term = corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{req}}
		}
		selector := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}
		errs := NodeSelector(field.NewPath("spec", "nodeSelector"), selector)
		parsed, parseErr := nodeaffinity.NewNodeSelector(selector)
		if len(errs) == 0 && parseErr != nil {
			t.Fatalf("validation accepts %+v, the parser rejects it: %v", req, parseErr)
		}
		if !asField && len(errs) > 0 && parseErr == nil {
			t.Fatalf("validation rejects %+v (%v), the parser accepts it", req, errs.ToAggregate())
		}
		if parseErr == nil {
			parsed.Match(&corev1.Node{}) // must not panic on a node without labels
		}
	})
}

// FuzzTimeWindow: a policy validation accepts gives a schedule, and the
// schedule answers at any instant with a next transition in the future.
func FuzzTimeWindow(f *testing.F) {
	f.Add("22:00", "06:00", "friday", "Europe/Berlin", int64(0))
	f.Add("09:00", "09:00", "", "", int64(1700000000))
	f.Add("24:00", "7:00", "Friday", "Europe/Berln", int64(-1))
	f.Add("00:00", "23:59", "sunday", "America/St_Johns", int64(1710054000))
	f.Fuzz(func(t *testing.T, start, end, day, zone string, unix int64) {
		window := kubeoceanv1alpha1.TimeWindow{Start: start, End: end}
		if day != "" {
			window.Days = []kubeoceanv1alpha1.DayOfWeek{kubeoceanv1alpha1.DayOfWeek(day)}
		}
		spec := kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "worker-1", TimeZone: zone, TimeWindows: []kubeoceanv1alpha1.TimeWindow{window}}
		errs := ResourceLeasingPolicySpec(&spec)
		schedule, err := timewindow.New(spec.TimeWindows, spec.TimeZone)
		if (len(errs) == 0) != (err == nil) {
			t.Fatalf("validation says %v, the schedule says %v, for %+v in %q", errs.ToAggregate(), err, window, zone)
		}
		if err != nil {
			return
		}
		// Keep the instant where time arithmetic is exact (years 1..9999).
		now := time.Unix(unix%(250000*365*86400), 0)
		state := schedule.At(now)
		if !state.NextTransition.IsZero() && !state.NextTransition.After(now) {
			t.Fatalf("next transition %v is not after %v", state.NextTransition, now)
		}
	})
}

// FuzzResourceLimit: a limit validation accepts never lends more than is
// available nor less than nothing, and never panics.
func FuzzResourceLimit(f *testing.F) {
	f.Add("4", int32(50), true, true, "8", "1")
	f.Add("-1", int32(101), true, true, "8", "1")
	f.Add("1Gi", int32(0), true, false, "16Gi", "20Gi")
	f.Add("500m", int32(100), false, true, "2", "0")
	f.Fuzz(func(t *testing.T, quantity string, percent int32, withQuantity, withPercent bool, allocatable, used string) {
		limit := kubeoceanv1alpha1.ResourceLimit{Resource: corev1.ResourceCPU}
		if withQuantity {
			q, err := resource.ParseQuantity(quantity)
			if err != nil {
				return // the API server refuses it before anyone sees it
			}
			limit.Quantity = &q
		}
		if withPercent {
			limit.Percent = &percent
		}
		alloc, err1 := resource.ParseQuantity(allocatable)
		inUse, err2 := resource.ParseQuantity(used)
		if err1 != nil || err2 != nil {
			return
		}
		spec := kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "worker-1", ResourceLimits: []kubeoceanv1alpha1.ResourceLimit{limit}}
		if len(ResourceLeasingPolicySpec(&spec)) > 0 {
			return
		}
		lent := capacity.Lendable(corev1.ResourceList{corev1.ResourceCPU: alloc}, corev1.ResourceList{corev1.ResourceCPU: inUse}, spec.ResourceLimits)
		got := lent[corev1.ResourceCPU]
		if got.Sign() < 0 {
			t.Fatalf("lends %s of %s with %s used under %+v", got.String(), alloc.String(), inUse.String(), limit)
		}
		if alloc.Sign() >= 0 && got.Cmp(alloc) > 0 {
			t.Fatalf("lends %s, more than the %s allocatable", got.String(), alloc.String())
		}
	})
}
