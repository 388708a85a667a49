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
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const managerFinalizer = kubeoceanv1alpha1.FinalizerClusterBindingManager

// secretWatchWait is when a binding whose Secret's watch has not synced is
// looked at again, should the sync not bring it back first.
const secretWatchWait = 5 * time.Second

// minRequeue keeps a requeue computed from times that just passed from
// becoming a hot loop.
const minRequeue = time.Second

// reconcile brings one binding a step closer to its desired state:
// finalizer, then Pending, then checks and syncer; a deleted binding is
// unbound.
func (c *Controller) reconcile(ctx context.Context, name string) (controller.Result, error) {
	// A binding that came, went or changed its Secret changes the Secrets
	// to watch.
	c.watchSecrets()
	b, err := c.bindings.Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, c.forgetGone(ctx, name)
	}
	if err != nil {
		return controller.Result{}, err
	}
	logger := klog.FromContext(ctx).WithValues("clusterBinding", klog.KObj(b))
	ctx = klog.NewContext(ctx, logger)

	if b.DeletionTimestamp != nil {
		return c.unbind(ctx, b)
	}
	if !slices.Contains(b.Finalizers, managerFinalizer) {
		// Metadata in this pass; the update event brings the next one.
		return controller.Result{}, c.addFinalizer(ctx, b)
	}
	if b.Status.Phase == "" {
		// Say at once that the binding was seen: the checks may take up
		// to the connection timeout.
		b, _, err = c.writeStatus(ctx, b, pendingStatus(b, c.clock.Now()))
		if err != nil {
			return controller.Result{}, err
		}
	}
	return c.sync(ctx, b)
}

func (c *Controller) addFinalizer(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding) error {
	updated := b.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, managerFinalizer)
	if _, err := c.client.ClusterBindings().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("adding finalizer %s: %w", managerFinalizer, err)
	}
	klog.FromContext(ctx).V(2).Info("Added finalizer", "finalizer", managerFinalizer)
	return nil
}

// secretWatched tells whether the watch of the binding's Secret has
// synced. Until then it is not known whether the Secret exists: the
// binding waits for the sync, which brings it back, rather than say so.
func (c *Controller) secretWatched(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding) bool {
	secret := cache.ObjectName{Namespace: b.Spec.SecretRef.Namespace, Name: b.Spec.SecretRef.Name}
	if c.secrets.Synced(secret) {
		return true
	}
	klog.FromContext(ctx).V(4).Info("Waiting for the watch of the kubeconfig Secret", "secret", secret)
	return false
}

// sync validates, checks and runs the syncer of a live binding, then
// writes what it found.
func (c *Controller) sync(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding) (controller.Result, error) {
	obs := observation{generation: b.Generation, secret: b.Spec.SecretRef}
	if invalid := c.validate(b); invalid != nil {
		obs.invalid = invalid
	} else {
		if !c.secretWatched(ctx, b) {
			return controller.RequeueAfter(secretWatchWait), nil
		}
		hash := c.kubeconfigHash(b)
		obs.conn = c.connect(ctx, b, hash)
		if obs.conn.failure == nil {
			state, err := c.syncers.Ensure(ctx, b, hash)
			if err != nil {
				return controller.Result{}, fmt.Errorf("running the syncer: %w", err)
			}
			obs.syncer = &state
		}
	}
	if obs.syncer == nil {
		// Whatever runs keeps running; report it as it is.
		if state, ok := c.syncers.Observe(b); ok {
			obs.syncer = &state
		}
	}
	now := c.clock.Now()
	updated, changed, err := c.writeStatus(ctx, b, desiredStatus(b.Status, obs, now))
	if err != nil {
		return controller.Result{}, err
	}
	if err := c.persistBackoff(ctx, updated, obs.conn); err != nil {
		return controller.Result{}, err
	}
	return c.next(obs, changed, now)
}

// next decides when the binding is looked at again.
func (c *Controller) next(obs observation, changed bool, now time.Time) (controller.Result, error) {
	switch {
	case obs.invalid != nil || (obs.conn.failure != nil && obs.conn.failure.Permanent):
		if !changed {
			return controller.Result{}, nil // already reported
		}
		// Retrying cannot help; a change to the binding or its Secret
		// enqueues it again.
		return controller.Result{}, controller.Terminal(fmt.Errorf("%s", readyMessage(obs)))
	case obs.conn.unreachable():
		return controller.RequeueAfter(max(min(obs.conn.retryAt.Sub(now), UnreachableProbeInterval), minRequeue)), nil
	case obs.conn.failure != nil:
		return controller.RequeueAfter(max(obs.conn.retryAt.Sub(now), minRequeue)), nil
	}
	after := max(obs.conn.checkedAt.Add(c.recheck).Sub(now), minRequeue)
	if obs.syncer != nil && obs.syncer.RetryAfter > 0 {
		after = min(after, max(obs.syncer.RetryAfter, minRequeue))
	}
	return controller.RequeueAfter(after), nil
}

// writeStatus writes status when it differs from the binding's and records
// the transition. It returns the binding as written (or as it was).
func (c *Controller) writeStatus(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding, status kubeoceanv1alpha1.ClusterBindingStatus) (*kubeoceanv1alpha1.ClusterBinding, bool, error) {
	if equality.Semantic.DeepEqual(b.Status, status) {
		return b, false, nil
	}
	updated := b.DeepCopy()
	updated.Status = status
	written, err := c.client.ClusterBindings().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		return nil, false, fmt.Errorf("updating status: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Updated status", "phase", status.Phase, "previousPhase", b.Status.Phase)
	c.recordTransition(b, written)
	return written, true, nil
}

// forgetGone drops what is kept for a binding that no longer exists, and
// stops a syncer that outlived it (its finalizers removed by hand).
func (c *Controller) forgetGone(ctx context.Context, name string) error {
	stub := &kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.syncers.Remove(ctx, stub); err != nil {
		return err
	}
	c.forget(name)
	return nil
}

// forget drops the connection record of a binding and the cached clients
// of its Secret when no other binding uses them.
func (c *Controller) forget(name string) {
	record := c.records.get(name)
	c.records.delete(name)
	if record == nil {
		return
	}
	users, err := c.index.ByIndex(secretIndex, secretKey(record.secret))
	if err != nil {
		return
	}
	for _, obj := range users {
		if b, ok := obj.(*kubeoceanv1alpha1.ClusterBinding); ok && b.Name != name {
			return
		}
	}
	c.checker.Forget(record.secret.Namespace, record.secret.Name)
}
