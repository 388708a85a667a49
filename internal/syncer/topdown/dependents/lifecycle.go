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

package dependents

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Lifecycle is the reconcile the per-kind controllers share: it decides
// whether a virtual object's copy is kept in step, released or deleted as
// an orphan. The controllers supply the kind's calls. All fields are
// required.
type Lifecycle struct {
	// Kind names the kind in logs.
	Kind string
	// Unused holds collection back for a grace period.
	Unused *UnusedTracker
	// InUse tells whether anything of the binding still uses the object.
	InUse func(key cache.ObjectName) (bool, error)
	// Ensure makes the copies the object needs exist and match.
	Ensure func(ctx context.Context, key cache.ObjectName) error
	// Release deletes the copies and then removes our marks.
	Release func(ctx context.Context, key cache.ObjectName) error
	// DeleteOrphan deletes a copy whose virtual object no longer holds it.
	DeleteOrphan func(ctx context.Context, key cache.ObjectName) error
}

// Reconcile handles the virtual object key; virtual is its cached state,
// nil when the cache of marked objects does not hold it.
//
//   - not cached: gone or not (or no longer) marked by us. A copy left
//     behind is an orphan only when nothing of the binding uses the
//     object: when pods still do (someone replaced the virtual object and
//     dropped our label and finalizer), it is marked and copied again, or,
//     if the virtual object is gone, its copy is kept for the pods until
//     they go (their events bring the key back);
//   - being deleted: its copies go, then our finalizer;
//   - in use: its copies are kept in step (restored if deleted);
//   - unused for the grace period: released, so nothing piles up in the
//     mount namespace and the object looks untouched.
func (l *Lifecycle) Reconcile(ctx context.Context, key cache.ObjectName, virtual metav1.Object) (controller.Result, error) {
	logger := klog.FromContext(ctx).WithValues("kind", l.Kind)
	ctx = klog.NewContext(ctx, logger)
	if virtual == nil {
		l.Unused.Forget(key)
		return l.unmarked(ctx, key)
	}
	if virtual.GetDeletionTimestamp() != nil {
		l.Unused.Forget(key)
		logger.V(2).Info("Virtual object is being deleted; deleting its physical copies")
		return ResultOf(l.Release(ctx, key))
	}
	used, err := l.InUse(key)
	if err != nil {
		return controller.Result{}, err
	}
	if used {
		l.Unused.Forget(key)
		return ResultOf(l.Ensure(ctx, key))
	}
	if wait := l.Unused.Unused(key); wait > 0 {
		return controller.RequeueAfter(wait), nil
	}
	l.Unused.Forget(key)
	logger.V(2).Info("Nothing of the binding uses the object any more; releasing it")
	if err := l.Release(ctx, key); err != nil {
		return ResultOf(err)
	}
	// A pod may have been started with the object while it was released:
	// the pod controller saw the copy and the marks still there. That pod
	// is in the shared cache by now, so look once more and copy again.
	if used, err := l.InUse(key); err != nil || !used {
		return controller.Result{}, err
	}
	logger.V(2).Info("Object is used again; copying it back")
	return ResultOf(l.Ensure(ctx, key))
}

// unmarked handles an object the cache of marked objects does not hold.
func (l *Lifecycle) unmarked(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	used, err := l.InUse(key)
	if err != nil {
		return controller.Result{}, err
	}
	if !used {
		return controller.Result{}, l.DeleteOrphan(ctx, key)
	}
	logger := klog.FromContext(ctx)
	err = l.Ensure(ctx, key)
	var notReady *NotReadyError
	if errors.As(err, &notReady) {
		// Gone or being deleted without our finalizer: nothing can be
		// marked, and deleting the copy would pull it from under the pods.
		logger.Info("Object is gone but pods of the binding still use its physical copy; keeping the copy until they go", "reason", notReady.Reason)
		return controller.Result{}, nil
	}
	if err == nil {
		// Either someone dropped our marks (now put back) or the cache of
		// marked objects lags behind a mark just made (nothing written).
		logger.V(2).Info("Object used by pods was not among the marked ones; made sure it is marked and copied")
	}
	return ResultOf(err)
}

// ByKey adapts a Release or DeleteOrphan call of the Syncer to a key.
func ByKey(f func(ctx context.Context, namespace, name string) error) func(context.Context, cache.ObjectName) error {
	return func(ctx context.Context, key cache.ObjectName) error { return f(ctx, key.Namespace, key.Name) }
}

// EnsureByKey adapts an Ensure call of the Syncer to a key.
func EnsureByKey(f func(ctx context.Context, namespace, name string) (string, error)) func(context.Context, cache.ObjectName) error {
	return func(ctx context.Context, key cache.ObjectName) error {
		_, err := f(ctx, key.Namespace, key.Name)
		return err
	}
}
