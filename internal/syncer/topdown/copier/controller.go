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

package copier

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// kind is what the controller of one copied kind is made of: the facts
// the copied kinds differ in, filled in by the table in kinds.go.
type kind[T metav1.Object] struct {
	// name names the controller, its queue and its metrics.
	name string
	// lifecycle is the dependents.Kind* naming the kind in errors.
	lifecycle string
	// namespaced is false for PVs, whose keys have no namespace.
	namespaced bool
	// virtual are the marked virtual objects, physical their copies.
	virtual, physical cache.SharedIndexInformer
	// get reads a marked virtual object from its lister.
	get func(cache.ObjectName) (T, error)
	// users tell whether an object is still used, and when that changes.
	users users
	// ensure, release and deleteOrphan are the Syncer's calls for the kind.
	ensure, release, deleteOrphan func(context.Context, cache.ObjectName) error
}

// users are what keeps the copies of a kind: whatever refers to the
// objects, read from informers whose changes requeue the objects.
type users interface {
	inUse(key cache.ObjectName) (bool, error)
	// hasSynced are the informers inUse reads.
	hasSynced() []cache.InformerSynced
	// watch registers the handlers that requeue an object when its users
	// change.
	watch(c *controller.Controller[cache.ObjectName]) error
}

// builder keeps the first error of building the controllers, so that the
// table reads as one literal.
type builder struct {
	opts Options
	err  error
}

// build makes the controller of kind k and registers its handlers; it
// starts nothing. After an earlier error it builds nothing.
func build[T metav1.Object](b *builder, k kind[T]) *dependents.Controller[T] {
	if b.err != nil {
		return nil
	}
	o := b.opts
	c, err := dependents.NewController(dependents.ControllerOptions[T]{
		Name: k.name,
		Lifecycle: &dependents.Lifecycle{
			Kind:         k.lifecycle,
			Unused:       dependents.NewUnusedTracker(o.Clock, o.GracePeriod),
			InUse:        k.users.inUse,
			Ensure:       k.ensure,
			Release:      k.release,
			DeleteOrphan: k.deleteOrphan,
		},
		Get:     k.get,
		Virtual: k.virtual, Physical: k.physical, Namespaced: k.namespaced,
		HasSynced: k.users.hasSynced(),
		Seen:      o.Syncer.CopySeen,
		Metrics:   o.Metrics,
	})
	if err != nil {
		b.err = err
		return nil
	}
	if err := k.users.watch(c.Controller); err != nil {
		b.err = fmt.Errorf("%s: %w", k.name, err)
		return nil
	}
	return c
}

// byName adapts the Syncer's calls on cluster-scoped objects (PVs), which
// take a name, to the queue's keys, whose namespace is empty.
func byName(f func(ctx context.Context, name string) error) func(context.Context, cache.ObjectName) error {
	return func(ctx context.Context, key cache.ObjectName) error { return f(ctx, key.Name) }
}

// ensureByName is byName for calls that also return the copy's name.
func ensureByName(f func(ctx context.Context, name string) (string, error)) func(context.Context, cache.ObjectName) error {
	return func(ctx context.Context, key cache.ObjectName) error {
		_, err := f(ctx, key.Name)
		return err
	}
}
