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

package node

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// While the physical apiserver does not answer, the virtual node keeps its
// last known state: the lease controller goes on renewing its Lease, so the
// virtual cluster neither marks it Unknown nor evicts its pods, which run
// on in the physical cluster. What the node says instead is that its state
// is stale: a PhysicalClusterReachable=False condition naming the last
// answer, and a NoSchedule taint, as a pod placed there could not be
// created in the physical cluster until it answers. Neither evicts
// anything. Both go once the apiserver answers again (the prober enqueues
// every node); the condition stays, True, on nodes that had it, to date the
// end of the outage.

const (
	// EventPhysicalClusterUnreachable (Warning) and
	// EventPhysicalClusterReachable (Normal) are recorded on a virtual node
	// when its outage condition turns False and back to True.
	EventPhysicalClusterUnreachable = kubeoceanv1alpha1.ReasonPhysicalAPIServerUnreachable
	EventPhysicalClusterReachable   = kubeoceanv1alpha1.ReasonPhysicalAPIServerAnswers
)

const conditionPhysicalReachable = corev1.NodeConditionType(kubeoceanv1alpha1.NodeConditionPhysicalClusterReachable)

// markOutage adds to desired what the node says about the physical
// apiserver: during an outage, the taint and the False condition; after
// one, the condition True again if current has it.
func (c *Controller) markOutage(desired *desiredNode, current *corev1.Node) {
	var currentConditions []corev1.NodeCondition
	if current != nil {
		currentConditions = current.Status.Conditions
	}
	var lastAnswer time.Time
	if c.physicalLastAnswer != nil {
		lastAnswer = c.physicalLastAnswer()
	}
	taint, condition := outageMarks(c.physicalAnswers(), lastAnswer, currentConditions, c.clock.Now())
	if taint != nil {
		desired.taints = append(desired.taints, *taint)
	}
	if condition != nil {
		desired.status.Conditions = append(slices.Clone(desired.status.Conditions), *condition)
	}
}

// outageMarks is the taint and condition a virtual node gets when the
// physical apiserver answers or not (nil: none). The message names
// lastAnswer, which stays the same for the whole outage, so the condition
// is written once per outage, not at every sync.
func outageMarks(answers bool, lastAnswer time.Time, current []corev1.NodeCondition, now time.Time) (*corev1.Taint, *corev1.NodeCondition) {
	stamp := metav1.NewTime(now)
	if !answers {
		since := "a while"
		if !lastAnswer.IsZero() {
			since = lastAnswer.UTC().Format(time.RFC3339)
		}
		return &corev1.Taint{Key: kubeoceanv1alpha1.TaintPhysicalUnreachable, Effect: corev1.TaintEffectNoSchedule},
			&corev1.NodeCondition{
				Type: conditionPhysicalReachable, Status: corev1.ConditionFalse,
				Reason: kubeoceanv1alpha1.ReasonPhysicalAPIServerUnreachable,
				Message: fmt.Sprintf("The physical apiserver has not answered since %s. The node and its pods are shown as last seen: "+
					"their statuses are stale, Kubeocean deletes nothing, and no new pod is scheduled here until it answers.", since),
				LastHeartbeatTime: stamp, LastTransitionTime: stamp,
			}
	}
	if !slices.ContainsFunc(current, func(c corev1.NodeCondition) bool { return c.Type == conditionPhysicalReachable }) {
		return nil, nil
	}
	return nil, &corev1.NodeCondition{
		Type: conditionPhysicalReachable, Status: corev1.ConditionTrue,
		Reason:            kubeoceanv1alpha1.ReasonPhysicalAPIServerAnswers,
		Message:           "The physical apiserver answers.",
		LastHeartbeatTime: stamp, LastTransitionTime: stamp,
	}
}

// reportOutageChange records an event on the virtual node when a status
// write turned its outage condition False, or back to True.
func (c *Controller) reportOutageChange(before, after *corev1.Node) {
	was, now := reachableStatus(before), reachableStatus(after)
	switch {
	case was == now:
	case now == corev1.ConditionFalse:
		c.recorder.Event(after, corev1.EventTypeWarning, EventPhysicalClusterUnreachable,
			"The physical apiserver does not answer: the node and its pods are kept as last seen, and the node takes no new pods until it answers")
	case now == corev1.ConditionTrue:
		c.recorder.Event(after, corev1.EventTypeNormal, EventPhysicalClusterReachable,
			"The physical apiserver answers again: the node's state is current again")
	}
}

func reachableStatus(node *corev1.Node) corev1.ConditionStatus {
	if node == nil {
		return ""
	}
	for _, c := range node.Status.Conditions {
		if c.Type == conditionPhysicalReachable {
			return c.Status
		}
	}
	return ""
}
