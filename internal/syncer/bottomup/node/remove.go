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
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// remove drains and deletes a virtual node (docs/workloads.md §4):
// taint it so nothing new lands, ask its pods to leave, and delete it once
// none is left. A pod that is terminating still counts: its physical twin
// may still run.
//
// Pods are asked through the eviction API, so that PodDisruptionBudgets
// hold them as they would on a drained node of any cluster, until the drain
// timeout has passed since the deletion taint was added; then, or at once
// when force is set (the physical node is being deleted), they are deleted.
// evictOnly (a configuration change: the physical node still runs the
// pods) never deletes them: the drain waits as long as the budgets say.
func (c *Controller) remove(ctx context.Context, name, reason string, force, evictOnly bool) (controller.Result, error) {
	logger := klog.FromContext(ctx).WithValues("node", klog.KRef("", name))
	listed, err := c.virtualNodes.Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	node := c.writes.latest(name, listed)
	if node == nil {
		c.writes.forget(name)
		return controller.Result{}, nil
	}
	if !c.owns(node) {
		return controller.Result{}, nil
	}

	if findTaint(node.Spec.Taints, kubeoceanv1alpha1.TaintVirtualNodeDeleting) == nil {
		tainted, err := c.taintDeleting(ctx, node)
		if err != nil {
			return controller.Result{}, c.writeFailed(name, err)
		}
		c.writes.wrote(name, node.ResourceVersion, tainted)
		node = tainted
		logger.Info("Draining virtual node", "reason", reason)
		c.recorder.Eventf(node, corev1.EventTypeNormal, kubeoceanv1alpha1.EventDraining, "Removing the virtual node: %s", reason)
	}

	evictUntil := c.evictionDeadline(node, force)
	active, err := c.evictPods(ctx, name, evictOnly || c.clock.Now().Before(evictUntil))
	if err != nil {
		return controller.Result{}, err
	}
	if active > 0 {
		logger.V(2).Info("Waiting for pods to leave the virtual node", "pods", active)
		recheck := drainRecheck
		if left := evictUntil.Sub(c.clock.Now()); !evictOnly && left > 0 && left < recheck {
			recheck = left
		}
		return controller.RequeueAfter(recheck), nil
	}

	err = c.nodesClient.Nodes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &node.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	c.writes.forget(name)
	logger.Info("Deleted virtual node", "reason", reason)
	return controller.Result{}, nil
}

// evictionDeadline is when the drain of node stops asking and deletes: the
// drain timeout after the deletion taint was added. A taint without its
// time cannot tell how long the drain has lasted: delete rather than wait
// forever.
func (c *Controller) evictionDeadline(node *corev1.Node, force bool) time.Time {
	taint := findTaint(node.Spec.Taints, kubeoceanv1alpha1.TaintVirtualNodeDeleting)
	if force || c.drainTimeout <= 0 || taint == nil || taint.TimeAdded == nil {
		return time.Time{}
	}
	return taint.TimeAdded.Add(c.drainTimeout)
}

// taintDeleting adds the deletion taint, recording it as Kubeocean's so
// that a node lent again gets it removed by the normal update path.
func (c *Controller) taintDeleting(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	now := metav1.NewTime(c.clock.Now().Truncate(1e9))
	taint := corev1.Taint{Key: kubeoceanv1alpha1.TaintVirtualNodeDeleting, Effect: corev1.TaintEffectNoSchedule, TimeAdded: &now}
	updated := node.DeepCopy()
	updated.Spec.Taints = append(updated.Spec.Taints, taint)
	last := decodeLastApplied(node)
	last.Taints = append(last.Taints, idOf(taint))
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	updated.Annotations[kubeoceanv1alpha1.AnnotationLastAppliedMetadata] = last.encode()
	return c.nodesClient.Nodes().Update(ctx, updated, metav1.UpdateOptions{})
}

// evictPods asks the pods still on the node to leave, through the eviction
// API when evict is set and by deleting them otherwise, and returns how
// many have not finished leaving it.
func (c *Controller) evictPods(ctx context.Context, node string, evict bool) (int, error) {
	objs, err := c.virtualPods.ByIndex(byNodeName, node)
	if err != nil {
		return 0, err
	}
	logger := klog.FromContext(ctx)
	active := 0
	for _, obj := range objs {
		pod := obj.(*corev1.Pod)
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		active++
		if pod.DeletionTimestamp != nil {
			continue
		}
		if evict {
			if err := c.evictPod(ctx, pod); err != nil {
				return active, err
			}
			continue
		}
		err := c.podsClient.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return active, err
		}
		logger.Info("Deleted pod from a virtual node being removed", "pod", klog.KObj(pod))
	}
	return active, nil
}

// evictPod asks the eviction API to remove pod. A refusal by a disruption
// budget (429), or by more than one budget (500), is not an error: the pod
// is asked again on the next look, until the drain timeout.
func (c *Controller) evictPod(ctx context.Context, pod *corev1.Pod) error {
	eviction := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
	}
	err := c.podsClient.Pods(pod.Namespace).EvictV1(ctx, eviction)
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod))
	switch {
	case err == nil:
		logger.Info("Evicted pod from a virtual node being removed")
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
	case apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err):
		logger.V(2).Info("Eviction refused; asking again later", "err", err)
	default:
		return err
	}
	return nil
}
