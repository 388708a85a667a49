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
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/preflight"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// isRefusal tells a create error that is the physical cluster's verdict on
// the pod itself (admission, quota, validation, a terminating namespace),
// which the same pod meets again until something changes, from errors
// worth retrying with backoff: the syncer's own authorization and the
// transient ones.
func isRefusal(err error) bool {
	switch {
	case apierrors.IsInvalid(err):
		return true
	case apierrors.IsForbidden(err):
		// The authorizer's refusal names the user; that is the syncer's
		// RBAC, not the pod, and is fixed without any event we watch.
		return !strings.Contains(err.Error(), " cannot create resource ")
	}
	return false
}

// webhookFailure is a create that a physical admission webhook failed or
// refused with a server error (500): the physical apiserver answered, and
// the same pod will likely meet the same answer, so it backs off with the
// controller's rate limiter (up to minutes) rather than being retried as an
// unavailable apiserver is, every few seconds, for as long as the webhook
// fails. It has no Unwrap for that reason: the retry classes read the
// status through the chain.
type webhookFailure struct{ err error }

func (e *webhookFailure) Error() string { return e.err.Error() }

// asWebhookFailure marks err when it is a physical admission webhook's
// server error.
func asWebhookFailure(err error) error {
	if apierrors.IsInternalError(err) && strings.Contains(err.Error(), "webhook") {
		return &webhookFailure{err: err}
	}
	return err
}

// refuse shows on the virtual pod why its physical pod is not created:
// kubeoceanv1alpha1.PodConditionPhysicalPodCreated False and one event, both only when they
// change. Unless the refusal is judged again on every pass, the pod is
// not sent again as it is (preflight.Memory). A pod refused for host ports
// waits for them to be freed on its node; one freed while the refusal was
// written would wake nobody, so they are looked at again after it.
func (c *Controller) refuse(ctx context.Context, virtual *corev1.Pod, refusal preflight.Refusal) (controller.Result, error) {
	key := controller.ObjectKey(virtual)
	if refusal.PortsOn != "" {
		c.preflight.Memory.WaitForPorts(key, refusal.PortsOn)
	}
	changed, err := c.setPhysicalPodCreated(ctx, virtual, corev1.ConditionFalse, refusal.Reason, refusal.Message)
	if err != nil {
		return controller.Result{}, err
	}
	if changed {
		c.recorder.Event(virtual, corev1.EventTypeWarning, refusal.Reason, refusal.Message)
		klog.FromContext(ctx).Info("Physical pod not created", "reason", refusal.Reason, "message", refusal.Message)
	}
	if !refusal.Again {
		c.preflight.Memory.Remember(key, virtual)
	}
	if refusal.PortsOn != "" && c.preflight.HostPorts.InUse(virtual, refusal.PortsOn) == "" {
		c.wakePortWaiters(refusal.PortsOn)
	}
	return controller.Result{}, nil
}

// registerHostPorts wakes the pods refused for host ports on a node when a
// port is freed there.
func (c *Controller) registerHostPorts(opts Options) {
	if opts.HostPorts == nil {
		return
	}
	opts.HostPorts.OnChange(func(node string, freed bool) {
		if freed {
			c.wakePortWaiters(node)
		}
	})
}

func (c *Controller) wakePortWaiters(node string) {
	for _, key := range c.preflight.Memory.ReleasePorts(node) {
		c.Enqueue(key)
	}
}

// setPhysicalPodCreated writes kubeoceanv1alpha1.PodConditionPhysicalPodCreated when it
// changes; True only over a False. changed tells whether it was written.
func (c *Controller) setPhysicalPodCreated(ctx context.Context, virtual *corev1.Pod, status corev1.ConditionStatus, reason, message string) (bool, error) {
	return c.setPodCondition(ctx, virtual, kubeoceanv1alpha1.PodConditionPhysicalPodCreated, status, reason, message)
}

// setPodCondition writes one of Kubeocean's conditions on the virtual pod
// when it changes. True is written only over a False: the usual pod keeps
// no condition, and costs no write. changed tells whether it was written.
func (c *Controller) setPodCondition(ctx context.Context, virtual *corev1.Pod, conditionType corev1.PodConditionType, status corev1.ConditionStatus, reason, message string) (bool, error) {
	existing := findCondition(virtual.Status.Conditions, conditionType)
	if existing == nil && status == corev1.ConditionTrue {
		return false, nil
	}
	if existing != nil && existing.Status == status && existing.Reason == reason && existing.Message == message {
		return false, nil
	}
	updated := virtual.DeepCopy()
	condition := findCondition(updated.Status.Conditions, conditionType)
	if condition == nil {
		updated.Status.Conditions = append(updated.Status.Conditions, corev1.PodCondition{Type: conditionType})
		condition = &updated.Status.Conditions[len(updated.Status.Conditions)-1]
	}
	if condition.Status != status {
		condition.LastTransitionTime = metav1.NewTime(c.clock.Now())
	}
	condition.Status, condition.Reason, condition.Message = status, reason, message
	_, err := c.virtualClient.Pods(virtual.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("setting %s=%s on virtual pod %s/%s: %w", conditionType, status, virtual.Namespace, virtual.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Set pod condition", "type", conditionType, "status", status, "reason", reason)
	return true, nil
}

// wakeRefused brings back every refused pod: what refused them may have
// changed.
func (c *Controller) wakeRefused() []cache.ObjectName { return c.preflight.Memory.ReleaseAll() }

// registerRefusalHandlers wakes the refused pods when the mount namespace's
// labels change (its Pod Security level), a quota in it changes, or a
// policy's allowances change (a policy added or removed changes the
// binding's allowances too: they are the intersection of its policies').
func (c *Controller) registerRefusalHandlers(opts Options) error {
	if opts.MountNamespaces != nil {
		h := controller.Handler[*corev1.Namespace, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: func(*corev1.Namespace) []cache.ObjectName { return c.wakeRefused() },
			Filter:  func(ns *corev1.Namespace) bool { return ns.Name == c.mountNamespace },
			Changed: func(oldNS, newNS *corev1.Namespace) bool { return !maps.Equal(oldNS.Labels, newNS.Labels) },
		}
		if err := c.Watch(opts.MountNamespaces.Informer(), h); err != nil {
			return fmt.Errorf("topdown pod: registering mount namespace handler: %w", err)
		}
	}
	if opts.Policies != nil {
		h := controller.Handler[*kubeoceanv1alpha1.ResourceLeasingPolicy, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: func(*kubeoceanv1alpha1.ResourceLeasingPolicy) []cache.ObjectName { return c.wakeRefused() },
			Changed: allowancesMayDiffer,
		}
		if err := c.Watch(opts.Policies, h); err != nil {
			return fmt.Errorf("topdown pod: registering policy handler: %w", err)
		}
	}
	if opts.ResourceQuotas != nil {
		h := controller.Handler[*corev1.ResourceQuota, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: func(*corev1.ResourceQuota) []cache.ObjectName { return c.wakeRefused() },
			Filter:  func(q *corev1.ResourceQuota) bool { return q.Namespace == c.mountNamespace },
			Changed: quotaMayAdmitMore,
		}
		if err := c.Watch(opts.ResourceQuotas.Informer(), h); err != nil {
			return fmt.Errorf("topdown pod: registering resource quota handler: %w", err)
		}
	}
	return nil
}

// allowancesMayDiffer tells a policy update that may change what the
// binding's pods are allowed: the allowances or the binding it names
// (spec.cluster and spec.mountNamespace). The
// status updates the bottom-up side makes every time window do not.
func allowancesMayDiffer(oldPolicy, newPolicy *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
	return oldPolicy.Spec.Cluster != newPolicy.Spec.Cluster || oldPolicy.Spec.MountNamespace != newPolicy.Spec.MountNamespace ||
		!equality.Semantic.DeepEqual(oldPolicy.Spec.Allowances, newPolicy.Spec.Allowances)
}

// quotaMayAdmitMore tells a quota change after which a pod it refused may
// pass: a limit changed, or usage went down. Usage going up, as every pod
// created in the namespace makes it, admits nothing new.
func quotaMayAdmitMore(oldQuota, newQuota *corev1.ResourceQuota) bool {
	if !equality.Semantic.DeepEqual(oldQuota.Spec, newQuota.Spec) || !equality.Semantic.DeepEqual(oldQuota.Status.Hard, newQuota.Status.Hard) {
		return true
	}
	for name, before := range oldQuota.Status.Used {
		after, ok := newQuota.Status.Used[name]
		if !ok || after.Cmp(before) < 0 {
			return true
		}
	}
	return false
}
