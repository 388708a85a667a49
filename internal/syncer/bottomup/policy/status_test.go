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

package policy

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// monday10 is Monday 2 March 2026, 10:00 UTC.
var monday10 = time.Date(2026, time.March, 2, 10, 0, 0, 0, time.UTC)

func window(start, end string, days ...kubeoceanv1alpha1.DayOfWeek) kubeoceanv1alpha1.TimeWindow {
	return kubeoceanv1alpha1.TimeWindow{Start: start, End: end, Days: days}
}

func TestEvaluate(t *testing.T) {
	at := func(day, hour, minute int) time.Time {
		return time.Date(2026, time.March, day, hour, minute, 0, 0, time.UTC)
	}
	tests := []struct {
		name          string
		spec          kubeoceanv1alpha1.ResourceLeasingPolicySpec
		now           time.Time
		phase         kubeoceanv1alpha1.ResourceLeasingPolicyPhase
		activeReason  string
		window        *kubeoceanv1alpha1.TimeWindow
		next, recheck time.Time
		invalid       string // substring of the Valid message when invalid
	}{
		{
			name:         "no windows lends at all times",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b"},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyActive,
			activeReason: kubeoceanv1alpha1.ReasonNoTimeWindows,
		},
		{
			name:         "inside a window",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("09:00", "17:00")}},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyActive,
			activeReason: kubeoceanv1alpha1.ReasonInTimeWindow,
			window:       &kubeoceanv1alpha1.TimeWindow{Start: "09:00", End: "17:00"},
			next:         at(2, 17, 0),
			recheck:      at(2, 17, 0),
		},
		{
			name:         "before a window",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("18:00", "20:00")}},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyInactive,
			activeReason: kubeoceanv1alpha1.ReasonOutsideTimeWindows,
			next:         at(2, 18, 0),
			recheck:      at(2, 18, 0),
		},
		{
			name:         "a window opening on another day",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("09:00", "17:00", kubeoceanv1alpha1.Saturday)}},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyInactive,
			activeReason: kubeoceanv1alpha1.ReasonOutsideTimeWindows,
			next:         at(7, 9, 0),
			recheck:      at(7, 9, 0),
		},
		{
			name:         "a window that opened yesterday and crosses midnight",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("22:00", "02:00", kubeoceanv1alpha1.Sunday)}},
			now:          at(2, 1, 0),
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyActive,
			activeReason: kubeoceanv1alpha1.ReasonInTimeWindow,
			window:       &kubeoceanv1alpha1.TimeWindow{Start: "22:00", End: "02:00", Days: []kubeoceanv1alpha1.DayOfWeek{kubeoceanv1alpha1.Sunday}},
			next:         at(2, 2, 0),
			recheck:      at(2, 2, 0),
		},
		{
			name: "windows read in the policy's time zone",
			spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeZone: "Europe/Berlin",
				TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("09:00", "11:00")}},
			now:          monday10, // 11:00 in Berlin: just closed
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyInactive,
			activeReason: kubeoceanv1alpha1.ReasonOutsideTimeWindows,
			next:         at(3, 8, 0),
			recheck:      at(3, 8, 0),
		},
		{
			name: "back-to-back windows: recheck when the open one closes",
			spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b",
				TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("08:00", "12:00"), window("12:00", "18:00")}},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyActive,
			activeReason: kubeoceanv1alpha1.ReasonInTimeWindow,
			window:       &kubeoceanv1alpha1.TimeWindow{Start: "08:00", End: "12:00"},
			next:         at(2, 18, 0),
			recheck:      at(2, 12, 0),
		},
		{
			name:         "a whole-day window every day never changes",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("00:00", "00:00")}},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyActive,
			activeReason: kubeoceanv1alpha1.ReasonInTimeWindow,
			window:       &kubeoceanv1alpha1.TimeWindow{Start: "00:00", End: "00:00"},
		},
		{
			name:         "an unknown time zone is invalid",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeZone: "Mars/Olympus_Mons"},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyFailed,
			activeReason: kubeoceanv1alpha1.ReasonInvalidSpec,
			invalid:      `spec.timeZone: Invalid value: "Mars/Olympus_Mons"`,
		},
		{
			name: "a selector the syncer cannot parse is invalid",
			spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"big"}}},
			}}}},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyFailed,
			activeReason: kubeoceanv1alpha1.ReasonInvalidSpec,
			invalid:      "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]",
		},
		{
			name:         "a malformed window is invalid",
			spec:         kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("25:00", "26:00")}},
			now:          monday10,
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyFailed,
			activeReason: kubeoceanv1alpha1.ReasonInvalidSpec,
			invalid:      "spec.timeWindows[0].start",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := evaluate(&tt.spec, tt.now)
			if e.phase != tt.phase {
				t.Errorf("phase = %s, want %s", e.phase, tt.phase)
			}
			if e.active.Reason != tt.activeReason {
				t.Errorf("Active reason = %s, want %s (%s)", e.active.Reason, tt.activeReason, e.active.Message)
			}
			wantActive := metav1.ConditionFalse
			if tt.phase == kubeoceanv1alpha1.ResourceLeasingPolicyActive {
				wantActive = metav1.ConditionTrue
			}
			if e.active.Status != wantActive {
				t.Errorf("Active = %s, want %s", e.active.Status, wantActive)
			}
			if (e.window == nil) != (tt.window == nil) || (e.window != nil && describeWindow(e.window) != describeWindow(tt.window)) {
				t.Errorf("window = %v, want %v", e.window, tt.window)
			}
			if !e.next.Equal(tt.next) || !e.recheck.Equal(tt.recheck) {
				t.Errorf("next, recheck = %v, %v; want %v, %v", e.next, e.recheck, tt.next, tt.recheck)
			}
			if tt.invalid == "" {
				if e.invalid != nil || e.valid.Status != metav1.ConditionTrue || e.valid.Reason != kubeoceanv1alpha1.ReasonValid {
					t.Errorf("valid spec reported invalid: %v %+v", e.invalid, e.valid)
				}
				return
			}
			if e.invalid == nil || e.valid.Status != metav1.ConditionFalse || e.valid.Reason != kubeoceanv1alpha1.ReasonInvalidSpec ||
				!strings.Contains(e.valid.Message, tt.invalid) {
				t.Errorf("Valid = %+v (err %v), want False/%s mentioning %q", e.valid, e.invalid, kubeoceanv1alpha1.ReasonInvalidSpec, tt.invalid)
			}
		})
	}
}

func TestApplyMovesTransitionTimesOnlyOnChange(t *testing.T) {
	spec := kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", TimeWindows: []kubeoceanv1alpha1.TimeWindow{window("09:00", "17:00")}}
	var status kubeoceanv1alpha1.ResourceLeasingPolicyStatus
	e := evaluate(&spec, monday10)
	e.apply(&status, 3, monday10)

	later := monday10.Add(time.Hour)
	e = evaluate(&spec, later)
	e.apply(&status, 3, later)
	for _, c := range status.Conditions {
		if !c.LastTransitionTime.Time.Equal(monday10) || c.ObservedGeneration != 3 {
			t.Errorf("condition %s moved to %v (generation %d) without a transition", c.Type, c.LastTransitionTime, c.ObservedGeneration)
		}
	}

	closed := time.Date(2026, time.March, 2, 17, 0, 0, 500, time.UTC)
	e = evaluate(&spec, closed)
	e.apply(&status, 3, closed)
	for _, c := range status.Conditions {
		want := monday10
		if c.Type == kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive {
			want = closed.Truncate(time.Second)
		}
		if !c.LastTransitionTime.Time.Equal(want) {
			t.Errorf("condition %s lastTransitionTime = %v, want %v", c.Type, c.LastTransitionTime, want)
		}
	}
	if status.ActiveTimeWindow != nil || status.Phase != kubeoceanv1alpha1.ResourceLeasingPolicyInactive {
		t.Errorf("after the window closed: phase %s, window %v", status.Phase, status.ActiveTimeWindow)
	}
	if status.NextTransitionTime == nil || !status.NextTransitionTime.Time.Equal(time.Date(2026, time.March, 3, 9, 0, 0, 0, time.UTC)) {
		t.Errorf("nextTransitionTime = %v, want Tuesday 09:00", status.NextTransitionTime)
	}
}
