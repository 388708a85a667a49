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
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/timewindow"
	"github.com/kubeocean/kubeocean/internal/validation"
)

// evaluation is what a policy's spec means at one instant, before it is
// merged into the status the policy already has.
type evaluation struct {
	phase  kubeoceanv1alpha1.ResourceLeasingPolicyPhase
	valid  metav1.Condition
	active metav1.Condition
	window *kubeoceanv1alpha1.TimeWindow
	// next is when the policy enters or leaves its windows; zero when never.
	next time.Time
	// recheck is when the status must be evaluated again: next, or earlier
	// when the open window closes while another one keeps the policy active.
	recheck time.Time
	// invalid holds the field errors of an invalid spec.
	invalid error
}

// evaluate validates spec and, when it is valid, evaluates its time windows
// at now.
func evaluate(spec *kubeoceanv1alpha1.ResourceLeasingPolicySpec, now time.Time) evaluation {
	if errs := validation.ResourceLeasingPolicySpec(spec); len(errs) > 0 {
		return invalidEvaluation(errs.ToAggregate())
	}
	schedule, err := timewindow.New(spec.TimeWindows, spec.TimeZone)
	if err != nil {
		// Validation accepts what the schedule accepts; stay safe anyway.
		return invalidEvaluation(err)
	}
	state := schedule.At(now)
	e := evaluation{
		phase:   kubeoceanv1alpha1.ResourceLeasingPolicyInactive,
		valid:   condition(kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid, metav1.ConditionTrue, kubeoceanv1alpha1.ReasonValid, "The spec is valid."),
		window:  state.Window,
		next:    state.NextTransition,
		recheck: state.NextTransition,
	}
	switch {
	case schedule.AlwaysActive():
		e.phase = kubeoceanv1alpha1.ResourceLeasingPolicyActive
		e.active = condition(kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive, metav1.ConditionTrue, kubeoceanv1alpha1.ReasonNoTimeWindows,
			"The policy has no time windows and lends its nodes at all times.")
	case state.Active:
		e.phase = kubeoceanv1alpha1.ResourceLeasingPolicyActive
		e.active = condition(kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive, metav1.ConditionTrue, kubeoceanv1alpha1.ReasonInTimeWindow,
			fmt.Sprintf("Inside the time window %s.", describeWindow(state.Window)))
		e.recheck = windowChange(state, spec.TimeZone, now)
	default:
		message := "Outside every time window."
		if !state.NextTransition.IsZero() {
			message = fmt.Sprintf("Outside every time window until %s.", state.NextTransition.In(schedule.Location()).Format(time.RFC3339))
		}
		e.active = condition(kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonOutsideTimeWindows, message)
	}
	return e
}

func invalidEvaluation(err error) evaluation {
	return evaluation{
		phase: kubeoceanv1alpha1.ResourceLeasingPolicyFailed,
		valid: condition(kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonInvalidSpec, err.Error()),
		active: condition(kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonInvalidSpec,
			"Nothing is lent while the spec is invalid."),
		invalid: err,
	}
}

// windowChange is when the open window stops being the one reported in
// status.activeTimeWindow: when it closes, or at the next transition if that
// comes first. Two windows back to back keep the policy active across the
// boundary, so the transition alone would leave the first one in the status.
func windowChange(state timewindow.State, timeZone string, now time.Time) time.Time {
	open, err := timewindow.New([]kubeoceanv1alpha1.TimeWindow{*state.Window}, timeZone)
	if err != nil {
		return state.NextTransition
	}
	closes := open.At(now).NextTransition
	if closes.IsZero() || (!state.NextTransition.IsZero() && state.NextTransition.Before(closes)) {
		return state.NextTransition
	}
	return closes
}

func condition(conditionType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: conditionType, Status: status, Reason: reason, Message: message}
}

// describeWindow renders a window for messages, e.g. "09:00-17:00 on
// monday,friday".
func describeWindow(w *kubeoceanv1alpha1.TimeWindow) string {
	if w == nil {
		return ""
	}
	days := "every day"
	if len(w.Days) > 0 {
		names := make([]string, len(w.Days))
		for i, d := range w.Days {
			names[i] = string(d)
		}
		days = "on " + strings.Join(names, ",")
	}
	return fmt.Sprintf("%s-%s %s", w.Start, w.End, days)
}

// apply writes the evaluation into status. Conditions keep their
// lastTransitionTime unless their status changes, in which case it becomes
// now.
func (e *evaluation) apply(status *kubeoceanv1alpha1.ResourceLeasingPolicyStatus, generation int64, now time.Time) {
	status.Phase = e.phase
	status.ObservedGeneration = generation
	status.ActiveTimeWindow = e.window.DeepCopy()
	status.NextTransitionTime = nil
	if !e.next.IsZero() {
		next := metav1.NewTime(e.next.UTC())
		status.NextTransitionTime = &next
	}
	// The API stores times to the second; a finer lastTransitionTime would
	// differ from what is read back.
	transition := metav1.NewTime(now.UTC().Truncate(time.Second))
	for _, c := range []metav1.Condition{e.valid, e.active} {
		c.ObservedGeneration = generation
		c.LastTransitionTime = transition
		meta.SetStatusCondition(&status.Conditions, c)
	}
}
