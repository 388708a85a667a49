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

package clusterbinding

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
)

const (
	conditionReady       = kubeoceanv1alpha1.ClusterBindingConditionReady
	conditionConnected   = kubeoceanv1alpha1.ClusterBindingConditionConnected
	conditionSyncerReady = kubeoceanv1alpha1.ClusterBindingConditionSyncerReady
)

// observation is what one reconcile found out about a binding.
type observation struct {
	generation int64
	secret     kubeoceanv1alpha1.SecretReference
	// invalid is set when the spec cannot be served; nothing else was
	// checked then.
	invalid *invalidSpec
	// conn is the connection record; nil when the spec is invalid.
	conn *connRecord
	// syncer is the syncer's state; nil when the binding has none.
	syncer *syncers.State
}

// pendingStatus is the status of a binding seen for the first time.
func pendingStatus(b *kubeoceanv1alpha1.ClusterBinding, now time.Time) kubeoceanv1alpha1.ClusterBindingStatus {
	status := *b.Status.DeepCopy()
	status.Phase = kubeoceanv1alpha1.ClusterBindingPending
	status.ObservedGeneration = b.Generation
	setConditions(&status, now, b.Generation,
		condition(conditionReady, metav1.ConditionUnknown, kubeoceanv1alpha1.ReasonPending, "The binding was accepted; its spec and its physical cluster are being checked."),
		condition(conditionConnected, metav1.ConditionUnknown, kubeoceanv1alpha1.ReasonNotChecked, "The physical cluster has not been checked yet."),
		condition(conditionSyncerReady, metav1.ConditionUnknown, kubeoceanv1alpha1.ReasonSyncerNotStarted, "The syncer starts once the binding is valid and connected."),
	)
	return status
}

// desiredStatus turns an observation into the binding's status: the phase
// and the Ready condition summarise the first step that is not done.
func desiredStatus(current kubeoceanv1alpha1.ClusterBindingStatus, obs observation, now time.Time) kubeoceanv1alpha1.ClusterBindingStatus {
	status := *current.DeepCopy()
	status.Phase, status.ObservedGeneration = phaseOf(obs), obs.generation
	if obs.conn != nil && obs.conn.failure == nil {
		status.LastSyncTime = ptrTime(obs.conn.checkedAt)
	}
	status.PhysicalClusterUID = pinnedUID(status.PhysicalClusterUID, obs.conn)
	ready := condition(conditionReady, metav1.ConditionFalse, readyReason(obs), readyMessage(obs))
	if status.Phase == kubeoceanv1alpha1.ClusterBindingReady {
		ready.Status = metav1.ConditionTrue
	}
	setConditions(&status, now, obs.generation, ready, connectedCondition(obs), syncerCondition(obs.syncer))
	return status
}

func phaseOf(obs observation) kubeoceanv1alpha1.ClusterBindingPhase {
	switch {
	case obs.invalid != nil, obs.conn.failure != nil:
		return kubeoceanv1alpha1.ClusterBindingFailed
	case obs.syncer == nil || obs.syncer.Phase == syncers.PhaseStarting:
		return kubeoceanv1alpha1.ClusterBindingPending
	case obs.syncer.Phase == syncers.PhaseFailed:
		return kubeoceanv1alpha1.ClusterBindingFailed
	default:
		return kubeoceanv1alpha1.ClusterBindingReady
	}
}

func readyReason(obs observation) string {
	switch {
	case obs.invalid != nil:
		return obs.invalid.reason
	case obs.conn.failure != nil:
		return obs.conn.failure.Reason
	case obs.syncer == nil:
		return kubeoceanv1alpha1.ReasonSyncerNotStarted
	case obs.syncer.Phase == syncers.PhaseReady:
		return kubeoceanv1alpha1.ReasonReady
	default:
		return obs.syncer.Reason
	}
}

func readyMessage(obs observation) string {
	switch {
	case obs.invalid != nil:
		return obs.invalid.message
	case obs.conn.failure != nil:
		return obs.conn.failure.Message
	case obs.syncer == nil:
		return "The syncer has not been started."
	case obs.syncer.Phase == syncers.PhaseReady:
		return "The binding is valid, its physical cluster is connected and its syncer runs."
	default:
		return obs.syncer.Message
	}
}

func connectedCondition(obs observation) metav1.Condition {
	switch {
	case obs.invalid != nil:
		return condition(conditionConnected, metav1.ConditionUnknown, kubeoceanv1alpha1.ReasonNotChecked, "The physical cluster is checked once the spec is valid.")
	case obs.conn.failure != nil:
		return condition(conditionConnected, metav1.ConditionFalse, obs.conn.failure.Reason, obs.conn.failure.Message)
	default:
		return condition(conditionConnected, metav1.ConditionTrue, kubeoceanv1alpha1.ReasonConnected, fmt.Sprintf(
			"The physical cluster answered through kubeconfig secret %s/%s, whose credentials allow what the syncer needs.",
			obs.secret.Namespace, obs.secret.Name))
	}
}

func syncerCondition(state *syncers.State) metav1.Condition {
	switch {
	case state == nil:
		return condition(conditionSyncerReady, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonSyncerNotStarted, "The syncer starts once the binding is valid and connected.")
	case state.Phase == syncers.PhaseReady:
		return condition(conditionSyncerReady, metav1.ConditionTrue, state.Reason, state.Message)
	default:
		return condition(conditionSyncerReady, metav1.ConditionFalse, state.Reason, state.Message)
	}
}

// unbindingStatus is the status of a binding whose syncer is cleaning up;
// blocked when the syncer cannot run.
func unbindingStatus(b *kubeoceanv1alpha1.ClusterBinding, state syncers.State, now time.Time) kubeoceanv1alpha1.ClusterBindingStatus {
	status := *b.Status.DeepCopy()
	status.ObservedGeneration = b.Generation
	ready := condition(conditionReady, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonUnbinding,
		"Unbinding: waiting for the syncer to remove what it created for the binding and drop the finalizer "+kubeoceanv1alpha1.FinalizerClusterBindingSyncer+".")
	status.Phase = kubeoceanv1alpha1.ClusterBindingPending
	if state.Phase == syncers.PhaseFailed {
		status.Phase = kubeoceanv1alpha1.ClusterBindingFailed
		ready.Reason = kubeoceanv1alpha1.ReasonUnbindingBlocked
		ready.Message = fmt.Sprintf("Unbinding is blocked: the syncer must clean up first but cannot run (%s). "+
			"If the physical cluster is gone for good, annotate the binding with %s=true to finish without the cleanup.",
			state.Message, kubeoceanv1alpha1.AnnotationForceUnbind)
	}
	setConditions(&status, now, b.Generation, ready, syncerCondition(&state))
	return status
}

func condition(conditionType string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: conditionType, Status: status, Reason: reason, Message: message}
}

// setConditions sets conditions, keeping each one's lastTransitionTime
// unless its status changes. Times are cut to the second, as the API
// stores them, so a status read back compares equal to the one written.
func setConditions(status *kubeoceanv1alpha1.ClusterBindingStatus, now time.Time, generation int64, conditions ...metav1.Condition) {
	transition := *ptrTime(now)
	for _, c := range conditions {
		c.ObservedGeneration = generation
		c.LastTransitionTime = transition
		meta.SetStatusCondition(&status.Conditions, c)
	}
}

func ptrTime(t time.Time) *metav1.Time {
	truncated := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &truncated
}

// recordTransition tells the user, once per change, what the Ready
// condition now says: Warning when the binding failed, Normal otherwise.
func (c *Controller) recordTransition(old, updated *kubeoceanv1alpha1.ClusterBinding) {
	was := meta.FindStatusCondition(old.Status.Conditions, conditionReady)
	now := meta.FindStatusCondition(updated.Status.Conditions, conditionReady)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason && was.Message == now.Message) {
		return
	}
	eventType := corev1.EventTypeNormal
	if updated.Status.Phase == kubeoceanv1alpha1.ClusterBindingFailed {
		eventType = corev1.EventTypeWarning
	}
	c.recorder.Event(updated, eventType, now.Reason, now.Message)
}
