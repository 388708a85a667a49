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
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/capacity"
	"github.com/kubeocean/kubeocean/internal/timewindow"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// drainRecheck is how often a draining node is looked at while pods remain
// on it (pod deletions also wake it up).
const drainRecheck = 10 * time.Second

// sync reconciles the virtual twin of the physical node named key.
func (c *Controller) sync(ctx context.Context, key string) (controller.Result, error) {
	in, verdict, err := c.inputs(ctx, key)
	if err != nil {
		return controller.Result{}, err
	}
	if verdict.freeze != "" {
		return c.freeze(ctx, key, in.binding, verdict.freeze)
	}
	c.thaw(ctx, key)
	if verdict.remove != "" && verdict.config {
		token := configToken(in.binding, in.policies)
		why, err := c.removalHold(key, in.binding, token)
		if err != nil {
			return controller.Result{}, err
		}
		if why != "" {
			return c.holdRemoval(ctx, key, in.binding, token, verdict.remove, why)
		}
	}
	if err := c.release(ctx, key); err != nil {
		return controller.Result{}, err
	}
	if verdict.remove != "" {
		return c.remove(ctx, c.virtualNodeName(key), verdict.remove, verdict.force, verdict.config)
	}
	return c.apply(ctx, in)
}

// verdict is what inputs concluded besides the inputs themselves; the zero
// value means the virtual node is applied from the inputs.
type verdict struct {
	// remove says why the physical node must not (any longer) have a
	// virtual twin.
	remove string
	// force drains without the eviction API: the physical node is going,
	// and its pods with it, whatever their disruption budgets say.
	force bool
	// freeze says why the node's fate cannot be evaluated now; it takes
	// precedence over everything but an explicit deletion.
	freeze string
	// config marks a removal that follows from the configuration (the
	// binding's or a policy's selector, a policy gone), not from the
	// physical node or the binding going: it waits for confirmation when
	// it would remove nodes that run pods or too many nodes, and never
	// deletes pods.
	config bool
}

// inputs gathers what the virtual node is computed from, or says why it is
// removed or left as it is.
func (c *Controller) inputs(ctx context.Context, key string) (nodeInputs, verdict, error) {
	in := nodeInputs{clusterID: c.clusterID}
	binding, err := c.bindings.Get(c.bindingName)
	switch {
	case apierrors.IsNotFound(err):
		return in, verdict{remove: "the ClusterBinding is gone"}, nil
	case err != nil:
		return in, verdict{}, err
	case binding.DeletionTimestamp != nil:
		return in, verdict{remove: "the ClusterBinding is being deleted"}, nil
	}
	in.binding = binding
	// Before anything physical: the nodes of another cluster say nothing
	// about this one's.
	if reason := physicalClusterChanged(binding, c.physicalClusterUID); reason != "" {
		return in, verdict{freeze: reason}, nil
	}
	// Before the physical node: with a selector that cannot be evaluated, a
	// node missing from the (selector-scoped) cache says nothing either.
	if reason := bindingSelectorInvalid(binding); reason != "" {
		return in, verdict{freeze: reason}, nil
	}

	policies, err := c.policies.List(labels.Everything())
	if err != nil {
		return in, verdict{}, err
	}
	in.policies = policies
	physical, err := c.physicalNodes.Get(key)
	switch {
	case apierrors.IsNotFound(err):
		// The informer may be scoped by the binding's node selector, so a
		// node that stops matching it leaves the cache too; a live read
		// tells the two apart.
		gone, err := c.physicalNodeGone(ctx, key)
		if err != nil {
			return in, verdict{}, err
		}
		if gone {
			return in, verdict{remove: "the physical node is gone"}, nil
		}
		return in, verdict{remove: "the ClusterBinding's node selector no longer selects the physical node", config: true}, nil
	case err != nil:
		return in, verdict{}, err
	case physical.DeletionTimestamp != nil:
		return in, verdict{remove: "the physical node is being deleted", force: true}, nil
	case !selects(binding.Spec.NodeSelector, physical):
		return in, verdict{remove: "the ClusterBinding's node selector no longer selects the physical node", config: true}, nil
	}
	in.physical = physical

	if reason := invalidPolicyFor(policies, c.borrower, physical); reason != "" {
		return in, verdict{freeze: reason}, nil
	}
	if in.policy = choosePolicy(policies, c.borrower, physical); in.policy == nil {
		return in, verdict{remove: "no ResourceLeasingPolicy lends the physical node", config: true}, nil
	}
	in.capacity = capacity.Lendable(physical.Status.Allocatable, c.foreignUsage.Of(key), in.policy.Spec.ResourceLimits)
	return in, verdict{}, nil
}

// apply creates or updates the virtual node, metadata and spec first, then
// status, each only when it differs.
func (c *Controller) apply(ctx context.Context, in nodeInputs) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	name := c.virtualNodeName(in.physical.Name)
	listed, err := c.virtualNodes.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	current := c.writes.latest(name, listed)
	if current != nil && !c.owns(current) {
		return controller.Result{}, c.nameCollision(in, name)
	}

	requeue, err := c.windowTaint(&in, current)
	if err != nil {
		return controller.Result{}, err
	}
	if c.kubeletEndpoint != nil {
		address, port, err := c.kubeletEndpoint(name, current)
		if err != nil {
			return controller.Result{}, err
		}
		in.kubelet = &kubeletEndpoint{address: address, port: port}
	}
	desired := buildDesired(name, in)
	c.markOutage(&desired, current)

	if current == nil {
		node := applyMetadata(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, desired)
		node.Status = desired.status
		created, err := c.nodesClient.Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return controller.Result{}, c.createFailed(ctx, in, name, err)
		}
		c.writes.wrote(name, "", created)
		c.writes.wroteStatus(name, c.clock.Now())
		logger.Info("Created virtual node", "node", klog.KRef("", name), "physicalNode", in.physical.Name, "policy", in.policy.Name)
		return controller.RequeueAfter(requeue), nil
	}

	updated := applyMetadata(current, desired)
	dropNotReadyTaint(updated)
	if !equality.Semantic.DeepEqual(updated.ObjectMeta, current.ObjectMeta) || !equality.Semantic.DeepEqual(updated.Spec, current.Spec) {
		if updated, err = c.nodesClient.Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return controller.Result{}, c.writeFailed(name, err)
		}
		c.writes.wrote(name, current.ResourceVersion, updated)
		logger.V(2).Info("Updated virtual node metadata", "node", klog.KObj(updated))
	}
	status := desiredStatus(updated.Status, desired.status)
	if !c.physicalAnswers() {
		status.Conditions = keepCondition(status.Conditions, updated.Status.Conditions, corev1.NodeReady)
	}
	before, after, changed := changedStatus(updated.Status, status)
	if !changed {
		return controller.RequeueAfter(requeue), nil
	}
	now := c.clock.Now()
	if wait := c.writes.statusWait(name, now); wait > 0 {
		// Coalesce: the requeue at the end of the interval writes the
		// figures of that moment.
		return controller.RequeueAfter(sooner(requeue, wait)), nil
	}
	written, err := c.patchStatus(ctx, name, before, after)
	if err != nil {
		return controller.Result{}, c.writeFailed(name, err)
	}
	c.writes.wrote(name, updated.ResourceVersion, written)
	c.reportOutageChange(updated, written)
	// From the answer, not the request: the next write then reaches the
	// API server at least an interval after this one was made.
	c.writes.wroteStatus(name, c.clock.Now())
	logger.V(2).Info("Updated virtual node status", "node", klog.KObj(written))
	return controller.RequeueAfter(requeue), nil
}

// dropNotReadyTaint removes the not-ready NoSchedule taint from a node
// whose Ready condition is True. The API server's NodeTaint admission puts
// that taint on every new node, and the virtual cluster's node lifecycle
// controller adds it while Ready is False and removes it once Ready is True
// again, but at its client's pace (by default 20 requests/s, two per
// node): with a thousand nodes lent at once, minutes in which the scheduler
// places nothing on them. This is that controller's own rule, applied with
// the syncer's next write of the node; a node not Ready keeps the taint.
func dropNotReadyTaint(node *corev1.Node) {
	if !conditionTrue(node.Status.Conditions, corev1.NodeReady) {
		return
	}
	node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule
	})
	if len(node.Spec.Taints) == 0 {
		node.Spec.Taints = nil
	}
}

func conditionTrue(conditions []corev1.NodeCondition, typ corev1.NodeConditionType) bool {
	i := slices.IndexFunc(conditions, func(c corev1.NodeCondition) bool { return c.Type == typ })
	return i >= 0 && conditions[i].Status == corev1.ConditionTrue
}

// patchStatus writes the difference between the node's status before and
// after as a strategic merge patch, as kubelets do: it carries no
// resourceVersion, so a concurrent writer of other fields (the virtual
// cluster's node lifecycle controller, marking the node Unknown) never
// makes it fail with a conflict, and it changes only the fields whose
// values Kubeocean changes.
func (c *Controller) patchStatus(ctx context.Context, name string, before, after corev1.NodeStatus) (*corev1.Node, error) {
	patch, err := statusPatch(before, after)
	if err != nil {
		return nil, err
	}
	return c.nodesClient.Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
}

// statusPatch is the strategic merge patch from one node status to another.
func statusPatch(before, after corev1.NodeStatus) ([]byte, error) {
	original, err := json.Marshal(corev1.Node{Status: before})
	if err != nil {
		return nil, err
	}
	modified, err := json.Marshal(corev1.Node{Status: after})
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(original, modified, corev1.Node{})
}

// changedStatus tells whether the node status after differs from before
// and returns both with the fields they agree on left out. A patch made of
// them is the one made of the whole statuses, since equal fields patch
// nothing; under foreign-pod churn, where a node's capacity changes many
// times a second and little else does, encoding and diffing only what
// changed saves most of the CPU a status write costs the syncer.
func changedStatus(before, after corev1.NodeStatus) (corev1.NodeStatus, corev1.NodeStatus, bool) {
	b, a := reflect.ValueOf(&before).Elem(), reflect.ValueOf(&after).Elem()
	changed := false
	for i := range b.NumField() {
		if equality.Semantic.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
			b.Field(i).SetZero()
			a.Field(i).SetZero()
			continue
		}
		changed = true
	}
	return before, after, changed
}

// writeFailed forgets what was written to a node whose write the API server
// refused for its version or existence: the informer's copy is the one to
// trust again.
func (c *Controller) writeFailed(name string, err error) error {
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		c.writes.forgetWritten(name)
	}
	return err
}

// sooner returns the shorter of two requeue delays, where 0 means none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// windowTaint evaluates the policy's time windows: outside them it sets
// in.windowTaint. It returns when to look again: the next window boundary
// or the end of a graceful reclaim period, whichever comes first.
func (c *Controller) windowTaint(in *nodeInputs, current *corev1.Node) (time.Duration, error) {
	schedule, err := timewindow.New(in.policy.Spec.TimeWindows, in.policy.Spec.TimeZone)
	if err != nil {
		return 0, controller.Terminal(err) // choosePolicy only returns valid policies
	}
	now := c.clock.Now()
	state := schedule.At(now)
	var requeue time.Duration
	if !state.NextTransition.IsZero() {
		requeue = state.NextTransition.Sub(now)
	}
	if state.Active {
		return requeue, nil
	}
	var existing *corev1.Taint
	if current != nil {
		existing = findTaint(current.Spec.Taints, kubeoceanv1alpha1.TaintOutOfTimeWindows)
	}
	taint, reclaimIn := outOfWindowTaint(existing, in.policy, now)
	in.windowTaint = &taint
	if reclaimIn > 0 && (requeue == 0 || reclaimIn < requeue) {
		requeue = reclaimIn
	}
	return requeue, nil
}

// owns reports whether node is a virtual node of this binding's cluster.
func (c *Controller) owns(node *corev1.Node) bool {
	return node.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
		node.Labels[kubeoceanv1alpha1.LabelClusterID] == c.clusterID
}

// nameCollision reports a foreign Node holding the virtual node's name. It
// is terminal: only a person can resolve it; the physical node's next
// change, or the binding's, looks again.
func (c *Controller) nameCollision(in nodeInputs, name string) error {
	c.recorder.Eventf(in.binding, corev1.EventTypeWarning, kubeoceanv1alpha1.EventNodeNameCollision,
		"Node %s exists and is not Kubeocean's virtual node for %s; leaving it alone", name, in.physical.Name)
	return controller.Terminal(fmt.Errorf("node %s exists and does not belong to cluster %s", name, c.clusterID))
}

// createFailed explains a failed create. AlreadyExists with nothing in the
// lister is either our node not yet seen, or a Node the label-scoped
// lister cannot see: one GET tells them apart, so a foreign Node gives an
// event instead of a retry loop.
func (c *Controller) createFailed(ctx context.Context, in nodeInputs, name string, err error) error {
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	existing, getErr := c.nodesClient.Nodes().Get(ctx, name, metav1.GetOptions{})
	switch {
	case getErr != nil:
		return fmt.Errorf("node %s already exists and cannot be read: %w", name, getErr)
	case !c.owns(existing):
		return c.nameCollision(in, name)
	}
	return err // ours: the informer catches up and the retry updates it
}
