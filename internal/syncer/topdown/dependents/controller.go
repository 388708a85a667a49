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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

// ControllerOptions describe one per-kind controller of copied objects.
// All fields but HasSynced and Metrics are required.
type ControllerOptions[T metav1.Object] struct {
	// Name names the controller, its queue and its metrics.
	Name string
	// Lifecycle is the kind's reconcile; its Kind names the kind in errors.
	Lifecycle *Lifecycle
	// Get reads the marked virtual object from its lister.
	Get func(key cache.ObjectName) (T, error)
	// Virtual are the marked virtual objects, Physical their copies.
	Virtual, Physical cache.SharedIndexInformer
	// Namespaced tells whether the kind is namespaced (all but PVs).
	Namespaced bool
	// HasSynced are the other informers the kind's calls read.
	HasSynced []cache.InformerSynced
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *controller.Metrics
	// Seen, when set, is told of every event of a copy before the event
	// is mapped to its key (Syncer.CopySeen).
	Seen func(physical any)
}

// Controller is what the per-kind controllers (package copier)
// share: the queue of virtual object keys, a reconcile that hands the
// cached virtual object to the Lifecycle, and the handlers of the virtual
// objects and of their copies. A kind adds the handlers of what else tells
// whether its objects are used.
type Controller[T metav1.Object] struct {
	*controller.Controller[cache.ObjectName]

	get       func(key cache.ObjectName) (T, error)
	lifecycle *Lifecycle
}

// NewController builds the controller and registers the handlers of the
// virtual objects and their copies; it starts nothing.
func NewController[T metav1.Object](opts ControllerOptions[T]) (*Controller[T], error) {
	c := &Controller[T]{get: opts.Get, lifecycle: opts.Lifecycle}
	c.Controller = controller.New(controller.Options[cache.ObjectName]{
		Name:      opts.Name,
		Reconcile: c.Reconcile,
		// Copies are released and orphans deleted from what the caches
		// say: never before they have synced.
		HasSynced: append(append([]cache.InformerSynced(nil), opts.HasSynced...), opts.Virtual.HasSynced, opts.Physical.HasSynced),
		Metrics:   opts.Metrics,
	})
	kind := opts.Lifecycle.Kind
	if err := c.Watch(opts.Virtual, controller.Handler[T, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    controller.ObjectKeys[T],
	}); err != nil {
		return nil, fmt.Errorf("%s: registering virtual %s handler: %w", opts.Name, kind, err)
	}
	// A copy deleted or edited by someone maps back to its virtual object,
	// which puts it right. Edits that touch only what is not ours (another
	// controller's labels) are dropped here.
	var seen func(T) bool
	if opts.Seen != nil {
		// The filter sees every event first, and lets all through.
		seen = func(physical T) bool { opts.Seen(physical); return true }
	}
	if err := c.Watch(opts.Physical, controller.Handler[T, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    CopyKeys[T](opts.Namespaced),
		Filter:  seen,
		Changed: CopyChanged[T],
	}); err != nil {
		return nil, fmt.Errorf("%s: registering physical %s handler: %w", opts.Name, kind, err)
	}
	return c, nil
}

// Reconcile hands the cached virtual object of key (nil when the cache of
// marked objects does not hold it) to the Lifecycle.
func (c *Controller[T]) Reconcile(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	virtual, err := c.get(key)
	switch {
	case apierrors.IsNotFound(err):
		return c.lifecycle.Reconcile(ctx, key, nil)
	case err != nil:
		return controller.Result{}, err
	}
	return c.lifecycle.Reconcile(ctx, key, virtual)
}

// CopyKeys maps a physical copy to the key of the virtual object it was
// made for, read from its mapping annotations; namespaced tells whether
// the kind is namespaced.
func CopyKeys[T metav1.Object](namespaced bool) func(physical T) []cache.ObjectName {
	return func(physical T) []cache.ObjectName {
		if key, ok := VirtualKeyOf(physical, namespaced); ok {
			return []cache.ObjectName{key}
		}
		return nil
	}
}
