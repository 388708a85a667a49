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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const syncerFinalizer = kubeoceanv1alpha1.FinalizerClusterBindingSyncer

// Requeues while unbinding. The informers report most progress; these
// only make sure a missed event cannot stall the unbinding.
const (
	removalRecheck = 10 * time.Second
	blockedRecheck = time.Minute
)

// unbind releases a deleted binding: its syncer keeps running until it has
// cleaned up (or the unbinding is forced), then it is stopped and the
// manager's finalizer removed.
func (c *Controller) unbind(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding) (controller.Result, error) {
	if !slices.Contains(b.Finalizers, managerFinalizer) {
		c.forget(b.Name)
		return controller.Result{}, nil
	}
	force := b.Annotations[kubeoceanv1alpha1.AnnotationForceUnbind] == "true"
	if slices.Contains(b.Finalizers, syncerFinalizer) && !force {
		return c.awaitSyncerCleanup(ctx, b)
	}
	gone, err := c.syncers.Remove(ctx, b)
	if err != nil {
		return controller.Result{}, fmt.Errorf("stopping the syncer: %w", err)
	}
	if !gone {
		return controller.RequeueAfter(removalRecheck), nil
	}
	if err := c.release(ctx, b, force); err != nil {
		return controller.Result{}, err
	}
	c.forget(b.Name)
	return controller.Result{}, nil
}

// awaitSyncerCleanup keeps the syncer of a deleted binding running and
// reports the unbinding in the status. A running syncer is left as it is,
// even if the deletion changed the binding's generation: restarting it now
// would only delay its cleanup.
func (c *Controller) awaitSyncerCleanup(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding) (controller.Result, error) {
	state, ok := c.syncers.Observe(b)
	if !ok || state.Phase == syncers.PhaseFailed {
		var err error
		state, err = c.syncers.Ensure(ctx, b, c.kubeconfigHash(b))
		if err != nil {
			return controller.Result{}, fmt.Errorf("running the syncer for its cleanup: %w", err)
		}
	}
	if _, _, err := c.writeStatus(ctx, b, unbindingStatus(b, state, c.clock.Now())); err != nil {
		return controller.Result{}, err
	}
	if state.Phase == syncers.PhaseFailed {
		return controller.RequeueAfter(max(state.RetryAfter, blockedRecheck)), nil
	}
	// The syncer dropping its finalizer brings the binding back.
	return controller.Result{}, nil
}

// release removes the manager's finalizer and, when forced, the syncer's.
func (c *Controller) release(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding, force bool) error {
	forced := force && slices.Contains(b.Finalizers, syncerFinalizer)
	updated := b.DeepCopy()
	updated.Finalizers = slices.DeleteFunc(updated.Finalizers, func(f string) bool {
		return f == managerFinalizer || (forced && f == syncerFinalizer)
	})
	_, err := c.client.ClusterBindings().Update(ctx, updated, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing finalizer %s: %w", managerFinalizer, err)
	}
	logger := klog.FromContext(ctx)
	if forced {
		logger.Info("Unbinding forced without the syncer's cleanup", "annotation", kubeoceanv1alpha1.AnnotationForceUnbind)
		c.recorder.Event(b, corev1.EventTypeWarning, kubeoceanv1alpha1.EventForceUnbind, leftovers(b))
	}
	logger.Info("Unbound")
	c.recorder.Event(b, corev1.EventTypeNormal, kubeoceanv1alpha1.EventUnbound, "The syncer is stopped and the binding released.")
	c.retryWaitingFor(b.Spec.MountNamespace)
	return nil
}

// retryWaitingFor checks again at once the bindings that wait for the
// mount namespace an unbinding just released, instead of at the end of
// their backoff.
func (c *Controller) retryWaitingFor(mountNamespace string) {
	for _, name := range c.records.waitingForNamespace() {
		if other, err := c.bindings.Get(name); err == nil && other.Spec.MountNamespace == mountNamespace {
			c.records.retryNow(name, c.clock.Now())
			c.Enqueue(name)
		}
	}
}

// leftovers tells what a forced unbinding may leave behind and how to find it.
func leftovers(b *kubeoceanv1alpha1.ClusterBinding) string {
	id := b.Spec.ClusterID
	return fmt.Sprintf("Unbinding forced by %s=true: the syncer's cleanup was skipped, so what it created may be left behind: "+
		"in the virtual cluster, nodes labelled %s=%s, and the finalizer %s and label %s on pods, ConfigMaps, Secrets, PVCs and PVs "+
		"(remove the finalizer by hand or those objects cannot be deleted); in the physical cluster, objects labelled %s=%s in namespace %s and PVs with that label "+
		"(objects of older versions: labelled %s=%s without %s), "+
		"and the finalizer %s on ResourceLeasingPolicies with spec.cluster=%s and spec.mountNamespace %s or unset.",
		kubeoceanv1alpha1.AnnotationForceUnbind,
		kubeoceanv1alpha1.LabelClusterID, id, kubeoceanv1alpha1.Finalizer(id), kubeoceanv1alpha1.SyncedByLabel(id),
		kubeoceanv1alpha1.LabelBindingUID, b.UID, b.Spec.MountNamespace,
		kubeoceanv1alpha1.LabelManagedBy, kubeoceanv1alpha1.ManagedByKubeocean, kubeoceanv1alpha1.LabelBindingUID,
		kubeoceanv1alpha1.FinalizerResourceLeasingPolicy, b.Name, b.Spec.MountNamespace)
}
