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
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const finalizer = kubeoceanv1alpha1.FinalizerResourceLeasingPolicy

// reconcile brings one policy of this binding one step closer to its
// desired state: finalizer first, then status; a deleted policy is released
// once its virtual nodes are reclaimed.
func (c *Controller) reconcile(ctx context.Context, name string) (controller.Result, error) {
	policy, err := c.policies.Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	// A virtual node may name a policy that now lends to another binding.
	if !ownership.PolicyLendsTo(policy, c.bindingName, c.mountNamespace) {
		return controller.Result{}, nil
	}
	logger := klog.FromContext(ctx).WithValues("resourceLeasingPolicy", klog.KObj(policy))
	ctx = klog.NewContext(ctx, logger)

	if policy.DeletionTimestamp != nil {
		return controller.Result{}, c.releaseWhenReclaimed(ctx, policy)
	}
	if !slices.Contains(policy.Finalizers, finalizer) {
		if c.active != nil && !c.active() {
			return c.syncStatus(ctx, policy)
		}
		// Metadata in this pass; the update event brings the status pass.
		return controller.Result{}, c.addFinalizer(ctx, policy)
	}
	return c.syncStatus(ctx, policy)
}

func (c *Controller) addFinalizer(ctx context.Context, policy *kubeoceanv1alpha1.ResourceLeasingPolicy) error {
	if err := c.patchFinalizers(ctx, policy, append(slices.Clone(policy.Finalizers), finalizer)); err != nil {
		return fmt.Errorf("adding finalizer %s: %w", finalizer, err)
	}
	klog.FromContext(ctx).V(2).Info("Added finalizer", "finalizer", finalizer)
	return nil
}

// releaseWhenReclaimed removes the finalizer of a deleted policy once no
// virtual node of this binding names it. The node controller treats a
// deleted policy as absent and drains, re-labels or removes the nodes it
// lent; each such node event wakes this controller, so nothing is polled.
func (c *Controller) releaseWhenReclaimed(ctx context.Context, policy *kubeoceanv1alpha1.ResourceLeasingPolicy) error {
	if !slices.Contains(policy.Finalizers, finalizer) {
		return nil
	}
	logger := klog.FromContext(ctx)
	lent, err := c.nodesLentBy(policy.Name)
	if err != nil {
		return err
	}
	if len(lent) > 0 {
		logger.V(4).Info("Waiting for virtual nodes to be reclaimed", "virtualNodes", len(lent), "firstVirtualNode", klog.KObj(lent[0]))
		return nil
	}
	err = c.patchFinalizers(ctx, policy, withoutOurFinalizer(policy))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing finalizer %s: %w", finalizer, err)
	}
	logger.V(2).Info("Virtual nodes reclaimed, removed finalizer", "finalizer", finalizer)
	c.recorder.Event(policy, corev1.EventTypeNormal, kubeoceanv1alpha1.EventPolicyReclaimed,
		"No virtual node is lent by the policy any more; releasing it for deletion.")
	return nil
}

// nodesLentBy lists the virtual nodes of this binding that name policy.
// The scan runs only for deleted policies, over the nodes of one binding.
func (c *Controller) nodesLentBy(policy string) ([]*corev1.Node, error) {
	selector := labels.SelectorFromSet(labels.Set{kubeoceanv1alpha1.LabelClusterBinding: c.bindingName})
	nodes, err := c.nodes.List(selector)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(nodes, func(n *corev1.Node) bool {
		return n.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy] != policy
	}), nil
}

// syncStatus writes the validity and time-window state of a live policy
// when it changed, and requeues the policy at its next window boundary.
func (c *Controller) syncStatus(ctx context.Context, policy *kubeoceanv1alpha1.ResourceLeasingPolicy) (controller.Result, error) {
	now := c.clock.Now()
	eval := evaluate(&policy.Spec, now)
	updated := policy.DeepCopy()
	eval.apply(&updated.Status, policy.Generation, now)

	changed := !equality.Semantic.DeepEqual(policy.Status, updated.Status)
	if changed {
		if _, err := c.client.ResourceLeasingPolicies().UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
			return controller.Result{}, fmt.Errorf("updating status: %w", err)
		}
		klog.FromContext(ctx).V(2).Info("Updated status", "phase", updated.Status.Phase, "nextTransition", eval.next)
		c.recordTransition(policy, &eval)
	}

	if eval.invalid != nil {
		if !changed {
			// Already reported in the status and an event: say it once.
			return controller.Result{}, nil
		}
		// Retrying cannot fix a spec; editing it enqueues the policy again.
		return controller.Result{}, controller.Terminal(fmt.Errorf("invalid spec: %w", eval.invalid))
	}
	if eval.recheck.IsZero() {
		return controller.Result{}, nil
	}
	return controller.RequeueAfter(eval.recheck.Sub(now)), nil
}

// recordTransition tells the user what changed, once: only when the phase
// changes, or when an invalid spec is edited into another invalid one.
func (c *Controller) recordTransition(policy *kubeoceanv1alpha1.ResourceLeasingPolicy, eval *evaluation) {
	previous := policy.Status.Phase
	switch {
	case eval.phase == kubeoceanv1alpha1.ResourceLeasingPolicyFailed:
		old := meta.FindStatusCondition(policy.Status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid)
		if previous != eval.phase || old == nil || old.Message != eval.valid.Message {
			c.recorder.Event(policy, corev1.EventTypeWarning, kubeoceanv1alpha1.EventInvalidPolicy, eval.valid.Message)
		}
	case previous == eval.phase:
	case eval.phase == kubeoceanv1alpha1.ResourceLeasingPolicyActive:
		c.recorder.Event(policy, corev1.EventTypeNormal, kubeoceanv1alpha1.EventPolicyActivated, eval.active.Message)
	case eval.phase == kubeoceanv1alpha1.ResourceLeasingPolicyInactive:
		c.recorder.Event(policy, corev1.EventTypeNormal, kubeoceanv1alpha1.EventPolicyDeactivated, eval.active.Message)
	}
}
