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

package unbind

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// progressRecheck is how often unbinding looks again while it waits for
// the other controllers (their events also wake it).
const progressRecheck = 5 * time.Second

func (c *Controller) sync(ctx context.Context, _ string) (controller.Result, error) {
	binding, err := c.bindings.Get(c.opts.BindingName)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	finalizer := kubeoceanv1alpha1.FinalizerClusterBindingSyncer
	if binding.DeletionTimestamp == nil {
		if slices.Contains(binding.Finalizers, finalizer) {
			return controller.Result{}, nil
		}
		return controller.Result{}, c.patchBindingFinalizers(ctx, binding, append(slices.Clone(binding.Finalizers), finalizer))
	}
	if !slices.Contains(binding.Finalizers, finalizer) {
		return controller.Result{}, nil
	}

	logger := klog.FromContext(ctx)
	if waiting, err := c.waitingFor(); err != nil || waiting != "" {
		if waiting != "" {
			logger.V(2).Info("Unbinding waits", "for", waiting)
		}
		return controller.RequeueAfter(progressRecheck), err
	}
	if err := c.releasePolicies(ctx, binding); err != nil {
		return controller.Result{}, err
	}
	if err := c.sweep(ctx, binding); err != nil {
		return controller.Result{}, err
	}
	remaining := slices.DeleteFunc(slices.Clone(binding.Finalizers), func(f string) bool { return f == finalizer })
	if err := c.patchBindingFinalizers(ctx, binding, remaining); err != nil {
		return controller.Result{}, err
	}
	logger.Info("Unbinding finished: the syncer's objects are gone")
	c.opts.Recorder.Event(binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventSyncerCleanedUp, "The syncer removed its virtual nodes and physical objects")
	return controller.Result{}, nil
}

// waitingFor says what the other controllers still have to remove: the
// virtual nodes (drained by the node controller) and the physical pods
// (deleted with their virtual pods by the top-down side).
func (c *Controller) waitingFor() (string, error) {
	nodes, err := c.virtualNodes.List(labels.Everything())
	if err != nil {
		return "", err
	}
	if len(nodes) > 0 {
		return "virtual nodes to be drained and removed", nil
	}
	pods, err := c.managedPods.List(labels.Everything())
	if err != nil {
		return "", err
	}
	// The informer holds only the binding's pods; the check keeps a wider
	// one from making unbinding wait for pods of another binding, which
	// nothing here would ever delete.
	if slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return c.owner.Owns(p) }) {
		return "physical pods to be deleted", nil
	}
	return "", nil
}

// releasePolicies drops the reclaim finalizer from the binding's policies
// that no other binding can rely on: with no syncer left, nobody else
// would. The finalizer has one name for every binding (the admission
// policy lets a syncer change only that one), so it speaks for one binding
// only on a policy pinned to its mount namespace (ownership.PolicyPinned).
// A policy that names no mount namespace lends to every binding of its
// spec.cluster, in every virtual cluster, and this syncer sees none of the
// others: while such a policy lives its finalizer stays, so that another
// binding of the name still finds its nodes' policy held when it is
// deleted; a policy being deleted lends to nobody any more and our nodes
// are reclaimed, so its finalizer goes, as the policy controller would.
func (c *Controller) releasePolicies(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding) error {
	policies, err := c.policies.List(labels.Everything())
	if err != nil {
		return err
	}
	finalizer := kubeoceanv1alpha1.FinalizerResourceLeasingPolicy
	var kept []string
	for _, p := range policies {
		if !ownership.PolicyLendsTo(p, c.opts.BindingName, c.opts.MountNamespace) || !slices.Contains(p.Finalizers, finalizer) {
			continue
		}
		if !ownership.PolicyPinned(p) && p.DeletionTimestamp == nil {
			kept = append(kept, p.Name)
			continue
		}
		remaining := slices.DeleteFunc(slices.Clone(p.Finalizers), func(f string) bool { return f == finalizer })
		patch, err := finalizersPatch(p.ResourceVersion, remaining)
		if err != nil {
			return err
		}
		_, err = c.opts.PhysicalKubeocean.KubeoceanV1alpha1().ResourceLeasingPolicies().Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if len(kept) > 0 {
		c.reportKept(ctx, binding, kept)
	}
	return nil
}

// reportKept says which policies keep their finalizer and how to release
// them, so that a deletion of one that hangs later is explained.
func (c *Controller) reportKept(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, kept []string) {
	slices.Sort(kept)
	klog.FromContext(ctx).Info("Leaving the reclaim finalizer on policies that name no mount namespace: another binding of the same name may use them",
		"resourceLeasingPolicies", kept, "finalizer", kubeoceanv1alpha1.FinalizerResourceLeasingPolicy)
	c.opts.Recorder.Eventf(binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventPolicyFinalizerKept,
		"ResourceLeasingPolicies %s keep the finalizer %s: they name no spec.mountNamespace, so another binding named %s "+
			"(of another virtual cluster, or a later binding of this one) may use them; its syncer releases it once the policy is deleted and its nodes are reclaimed. "+
			"Pin a policy to one binding with spec.mountNamespace; once no binding named %s uses one, remove the finalizer by hand "+
			"(docs/operations.md, \"Policies shared by name\").",
		strings.Join(kept, ", "), kubeoceanv1alpha1.FinalizerResourceLeasingPolicy, c.opts.BindingName, c.opts.BindingName)
}

func (c *Controller) patchBindingFinalizers(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, finalizers []string) error {
	patch, err := finalizersPatch(binding.ResourceVersion, finalizers)
	if err != nil {
		return err
	}
	_, err = c.opts.VirtualKubeocean.KubeoceanV1alpha1().ClusterBindings().Patch(ctx, binding.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// finalizersPatch replaces the finalizer list, guarded by resourceVersion
// so a finalizer someone else added meanwhile is never lost.
func finalizersPatch(resourceVersion string, finalizers []string) ([]byte, error) {
	if finalizers == nil {
		finalizers = []string{}
	}
	return json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": resourceVersion, "finalizers": finalizers,
	}})
}
