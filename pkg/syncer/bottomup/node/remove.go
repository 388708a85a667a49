package node

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// remove drains and deletes a virtual node (spec bottomup-syncer.md §4.2):
// taint it so nothing new lands, evict its pods, and delete it once none is
// left. A pod that is terminating still counts: its physical twin may still
// run.
func (c *Controller) remove(ctx context.Context, name, reason string) (controller.Result, error) {
	logger := klog.FromContext(ctx).WithValues("node", klog.KRef("", name))
	node, err := c.virtualNodes.Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if !c.owns(node) {
		return controller.Result{}, nil
	}

	if findTaint(node.Spec.Taints, kubeoceanv1alpha1.TaintVirtualNodeDeleting) == nil {
		if node, err = c.taintDeleting(ctx, node); err != nil {
			return controller.Result{}, err
		}
		logger.Info("Draining virtual node", "reason", reason)
		c.recorder.Eventf(node, corev1.EventTypeNormal, "Draining", "Removing the virtual node: %s", reason)
	}

	active, err := c.evictPods(ctx, name)
	if err != nil {
		return controller.Result{}, err
	}
	if active > 0 {
		logger.V(2).Info("Waiting for pods to leave the virtual node", "pods", active)
		return controller.RequeueAfter(drainRecheck), nil
	}

	err = c.nodesClient.Nodes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &node.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	logger.Info("Deleted virtual node", "reason", reason)
	return controller.Result{}, nil
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
	updated.Annotations[annotationLastApplied] = last.encode()
	return c.nodesClient.Nodes().Update(ctx, updated, metav1.UpdateOptions{})
}

// evictPods deletes the pods still on the node and returns how many have
// not finished leaving it.
func (c *Controller) evictPods(ctx context.Context, node string) (int, error) {
	objs, err := c.virtualPods.ByIndex(byNodeName, node)
	if err != nil {
		return 0, err
	}
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
		err := c.podsClient.Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return active, err
		}
		klog.FromContext(ctx).Info("Evicted pod from a virtual node being removed", "pod", klog.KObj(pod))
	}
	return active, nil
}
