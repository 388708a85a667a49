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

package lease

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/nodeowner"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// reconcile brings the Lease of the virtual node name in line: absent when
// the node is gone, renewed when due while the physical node is Ready, left
// to expire otherwise.
func (c *Controller) reconcile(ctx context.Context, name string) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	lease, err := c.leases.Leases(corev1.NamespaceNodeLease).Get(name)
	if apierrors.IsNotFound(err) {
		lease, err = nil, nil
	}
	if err != nil {
		return controller.Result{}, err
	}

	node, err := c.virtualNodes.Get(name)
	if apierrors.IsNotFound(err) || (err == nil && !c.ownsVirtualNode(node)) {
		return controller.Result{}, c.deleteLease(ctx, lease)
	}
	if err != nil {
		return controller.Result{}, err
	}
	if lease != nil && !c.ownsLease(lease) {
		// Someone else heartbeats under this name: renewing or taking it
		// over would hide a conflict that only a person can resolve.
		return controller.Result{}, controller.Terminal(fmt.Errorf(
			"lease %s is not managed by kubeocean cluster %q; leaving it alone", klog.KObj(lease), c.clusterID))
	}

	physicalName := kubeoceanv1alpha1.PhysicalNodeNameOf(node)
	ready := c.physicalNodeReady(physicalName)
	now := c.clock.Now()
	if ready && !renewsDuringOutage(c.answers(), c.lastAnswer(), now, c.outageLimit) {
		// The outage outlasted the operator's bound: let the Lease expire.
		// The prober enqueues every Lease once the apiserver answers again.
		logger.V(2).Info("The physical apiserver has not answered for longer than the outage renewal limit; not renewing the lease",
			"node", klog.KObj(node), "lastAnswer", c.lastAnswer(), "limit", c.outageLimit)
		ready = false
	}
	renew, wait := c.renewalDue(lease, now)
	if !ready {
		// No requeue: the physical node's next change enqueues this key.
		logger.V(4).Info("Physical node is not Ready; letting the lease expire",
			"physicalNode", physicalName, "node", klog.KObj(node))
		renew = false
	}

	switch {
	case lease == nil && !ready:
		return controller.Result{}, nil
	case lease == nil:
		return c.createLease(ctx, c.desiredLease(nil, node, now, true))
	}

	desired := c.desiredLease(lease, node, now, renew)
	// A renewal moves renewTime: only a pass that does not renew can find
	// nothing to write.
	if !renew && equality.Semantic.DeepEqual(lease, desired) {
		return requeueWhileReady(ready, wait), nil
	}
	if _, err := c.client.Leases(desired.Namespace).Update(ctx, desired, metav1.UpdateOptions{}); err != nil {
		return controller.Result{}, fmt.Errorf("updating lease %s: %w", klog.KObj(desired), err)
	}
	logger.V(5).Info("Updated lease", "lease", klog.KObj(desired), "renewed", renew)
	if renew {
		wait = c.renewInterval
	}
	return requeueWhileReady(ready, wait), nil
}

func requeueWhileReady(ready bool, wait time.Duration) controller.Result {
	if !ready {
		return controller.Result{}
	}
	return controller.RequeueAfter(wait)
}

// renewalDue tells whether lease must be renewed now and, if not, how long
// until it must. A small margin renews a little early rather than a whole
// interval late when the requeue fires a hair before the interval is up; a
// renewTime in the future (another replica's clock) waits at most one
// interval.
func (c *Controller) renewalDue(lease *coordinationv1.Lease, now time.Time) (bool, time.Duration) {
	if lease == nil || lease.Spec.RenewTime == nil {
		return true, c.renewInterval
	}
	age := now.Sub(lease.Spec.RenewTime.Time)
	if age >= c.renewInterval-c.renewInterval/10 {
		return true, c.renewInterval
	}
	return false, min(c.renewInterval-age, c.renewInterval)
}

// physicalNodeReady reads the physical node a virtual node stands for; a
// node that is missing or not Ready gets no heartbeat.
func (c *Controller) physicalNodeReady(name string) bool {
	if name == "" {
		return false
	}
	node, err := c.physicalNodes.Get(name)
	if err != nil {
		return false
	}
	return nodeReady(node)
}

// desiredLease is current (nil: a new Lease) with our labels, the owner
// reference to node, the holder and duration set, and, when renew, the
// renewTime moved to now. Labels and owner references of others are kept.
// The lease handler's writtenFieldsChanged compares what this sets.
func (c *Controller) desiredLease(current *coordinationv1.Lease, node *corev1.Node, now time.Time, renew bool) *coordinationv1.Lease {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node.Name}}
	if current != nil {
		lease = current.DeepCopy()
	}
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[kubeoceanv1alpha1.LabelManagedBy] = kubeoceanv1alpha1.ManagedByKubeocean
	lease.Labels[kubeoceanv1alpha1.LabelClusterID] = c.clusterID
	lease.OwnerReferences = nodeowner.Set(lease.OwnerReferences, node)
	lease.Spec.HolderIdentity = ptr.To(node.Name)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(c.leaseDuration / time.Second))
	if renew {
		renewTime := metav1.NewMicroTime(now)
		lease.Spec.RenewTime = &renewTime
		if lease.Spec.AcquireTime == nil {
			lease.Spec.AcquireTime = &renewTime
		}
	}
	return lease
}

func (c *Controller) createLease(ctx context.Context, lease *coordinationv1.Lease) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	_, err := c.client.Leases(lease.Namespace).Create(ctx, lease, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Either our cache lags behind our own create (its event will
		// enqueue the key again) or a foreign Lease, which the scoped cache
		// does not show, holds the name.
		existing, getErr := c.client.Leases(lease.Namespace).Get(ctx, lease.Name, metav1.GetOptions{})
		if getErr != nil {
			return controller.Result{}, fmt.Errorf("lease %s exists but cannot be read: %w", klog.KObj(lease), getErr)
		}
		if !c.ownsLease(existing) {
			return controller.Result{}, controller.Terminal(fmt.Errorf(
				"lease %s is not managed by kubeocean cluster %q; leaving it alone", klog.KObj(lease), c.clusterID))
		}
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("creating lease %s: %w", klog.KObj(lease), err)
	}
	logger.V(2).Info("Created lease", "lease", klog.KObj(lease))
	return controller.RequeueAfter(c.renewInterval), nil
}

// deleteLease removes our Lease of a virtual node that is gone. The garbage
// collector would too, through the owner reference; deleting it here does
// not wait for it and also covers a Lease whose owner reference was lost.
func (c *Controller) deleteLease(ctx context.Context, lease *coordinationv1.Lease) error {
	if lease == nil || !c.ownsLease(lease) {
		return nil
	}
	err := c.client.Leases(lease.Namespace).Delete(ctx, lease.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &lease.UID},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting lease %s: %w", klog.KObj(lease), err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted the lease of a removed virtual node", "lease", klog.KObj(lease))
	return nil
}
