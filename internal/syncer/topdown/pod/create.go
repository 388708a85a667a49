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

package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/preflight"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// create makes the physical pod of a virtual pod that has none: judged
// first (package preflight), then its dependencies copied and its token
// Secret made, and the pod created. Nothing is written to the virtual pod
// before: the physical name is a function of the virtual namespace and
// name, and the physical pod records the virtual pod's UID, so the pod is
// found and proven this virtual pod's twin without a mapping on the virtual
// side. The bottom-up side records the mapping, with the physical UID, in
// its first status write.
func (c *Controller) create(ctx context.Context, virtual *corev1.Pod, m mapping, physicalNode string) (controller.Result, error) {
	candidate := &preflight.Pod{Virtual: virtual, PhysicalNode: physicalNode, Physical: func() *corev1.Pod {
		// The checks read the spec and annotations, not the names of the
		// copies, which are not resolved yet.
		return podspec.PhysicalPod(virtual, c.translation(virtual, m.name, physicalNode, podspec.Names{Namespace: virtual.Namespace}))
	}}
	if refusal := c.preflight.Checks.First(ctx, candidate); refusal != nil {
		return c.refuse(ctx, virtual, *refusal)
	}

	names, problem := c.resolveDependencies(ctx, virtual)
	if problem != nil {
		return c.waitForDependencies(ctx, virtual, problem)
	}
	if _, err := c.identity.Ensure(ctx, virtual, m.name, podidentity.PlanFor(virtual)); err != nil {
		return controller.Result{}, err
	}

	t := c.translation(virtual, m.name, physicalNode, names)
	t.Network = podspec.NetworkFor(c.network, virtual)
	created, err := c.physicalClient.Pods(c.mountNamespace).Create(ctx, podspec.PhysicalPod(virtual, t), metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		return c.checkNameTaken(ctx, virtual, m)
	case isRefusal(err):
		// Admission, quota or validation: the same pod meets the same
		// answer until it, the mount namespace's labels or its quotas
		// change, each of which brings it back.
		return c.refuse(ctx, virtual, preflight.Refusal{Reason: kubeoceanv1alpha1.ReasonPhysicalPodRejected, Message: "The physical cluster refused the pod: " + err.Error()})
	case err != nil:
		return controller.Result{}, fmt.Errorf("creating physical pod %s/%s: %w", c.mountNamespace, m.name, asWebhookFailure(err))
	}
	c.created.ExpectCreation(controller.ObjectKey(virtual), virtual.UID)
	c.blocked.Note(ctx, controller.ObjectKey(virtual), "")
	klog.FromContext(ctx).V(2).Info("Created physical pod", "physicalPod", klog.KObj(created), "physicalNode", physicalNode)
	return controller.Result{}, nil
}

// translation is what physicalPod needs to make the physical pod of
// virtual, named physicalName, on physicalNode, with the copies names.
func (c *Controller) translation(virtual *corev1.Pod, physicalName, physicalNode string, names podspec.Names) podspec.Translation {
	return podspec.Translation{
		MountNamespace: c.mountNamespace,
		Owner:          c.owner,
		PhysicalName:   physicalName,
		PhysicalNode:   physicalNode,
		Names:          names,
		Plan:           podidentity.PlanFor(virtual),
		APIServer:      c.apiServer,
		Allowed:        c.allowances.Current(),
	}
}

// waitForDependencies shows on the virtual pod why it cannot be created
// yet, once per change (condition and event), and retries: with backoff
// while a dependency is not ready, and after conflictRecheck on a name
// conflict, which only someone else can resolve and whose resolution sends
// us no event.
func (c *Controller) waitForDependencies(ctx context.Context, virtual *corev1.Pod, problem *dependencyProblem) (controller.Result, error) {
	if problem.reason == "" {
		return controller.Result{}, problem.err
	}
	changed, err := c.setDependenciesReady(ctx, virtual, corev1.ConditionFalse, problem.reason, problem.message)
	if err != nil {
		return controller.Result{}, err
	}
	if changed {
		eventType := corev1.EventTypeNormal
		if problem.conflict {
			eventType = corev1.EventTypeWarning
		}
		c.recorder.Event(virtual, eventType, problem.reason, problem.message)
	}
	if problem.conflict {
		klog.FromContext(ctx).Error(problem.err, "Pod cannot be created until the conflicting physical object is removed", "recheckAfter", conflictRecheck)
		return controller.RequeueAfter(conflictRecheck), nil
	}
	return controller.Result{}, problem.err
}

// checkNameTaken handles a create that found the physical name taken: by
// our own pod the cache has not shown yet (its event comes), by an earlier
// virtual pod's (the bottom-up side deletes it), or by a pod Kubeocean did
// not make, which only someone else can remove.
func (c *Controller) checkNameTaken(ctx context.Context, virtual *corev1.Pod, m mapping) (controller.Result, error) {
	live, err := c.physicalClient.Pods(c.mountNamespace).Get(ctx, m.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return controller.Result{}, fmt.Errorf("physical pod %s/%s existed at create and is gone now; retrying", c.mountNamespace, m.name)
	case err != nil:
		return controller.Result{}, err
	case c.isManagedPod(live):
		klog.FromContext(ctx).V(4).Info("Physical pod already exists; cache is behind")
		return controller.Result{}, nil
	}
	adoptable, why, err := c.adoptable(ctx, virtual, live)
	switch {
	case err != nil:
		return controller.Result{}, err
	case adoptable:
		klog.FromContext(ctx).Info("Adopting the physical pod an older version or an earlier binding made for this pod", "physicalPod", klog.KObj(live))
		return controller.Result{}, c.adopt(ctx, virtual, live)
	}
	err = fmt.Errorf("physical pod %s/%s exists and was not made by Kubeocean for this binding%s", c.mountNamespace, m.name, why)
	c.blocked.Note(ctx, controller.ObjectKey(virtual), fmt.Sprintf("physical pod %s/%s%s", c.mountNamespace, m.name, blockerOrForeign(why)))
	c.recorder.Event(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPhysicalPodNameTaken, err.Error())
	klog.FromContext(ctx).Error(err, "Pod cannot be created until the foreign physical pod is removed", "recheckAfter", conflictRecheck)
	return controller.RequeueAfter(conflictRecheck), nil
}

// desiredState is podspec.DesiredState for the binding, with what its
// policies allow now.
func (c *Controller) desiredState(virtual *corev1.Pod) podspec.AppliedState {
	return podspec.DesiredState(virtual, c.owner, c.allowances.Current())
}
