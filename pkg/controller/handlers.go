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

package controller

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
)

// Unwrap returns obj as a T, looking inside the tombstone an informer hands
// to OnDelete when it missed the final state of a deleted object.
func Unwrap[T any](obj any) (T, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	typed, ok := obj.(T)
	return typed, ok
}

// ObjectKey is the namespace/name key of an object, the usual queue key.
func ObjectKey(obj metav1.Object) cache.ObjectName {
	return cache.MetaObjectToName(obj)
}

// ObjectKeys maps an object to its own key; use it as Handler.Keys when a
// controller reconciles the objects it watches.
func ObjectKeys[T metav1.Object](obj T) []cache.ObjectName {
	return []cache.ObjectName{ObjectKey(obj)}
}

// Handler turns informer events on objects of type T into queue keys of type
// K. Keys maps an object to the keys to reconcile, which may be its own key
// or another object's (a physical pod to its virtual pod, a policy to the
// nodes it selects). It unwraps tombstones, drops periodic-resync updates
// that change nothing, and enqueues the keys of both the old and the new
// object on update, so an object that stops mapping to a key still has that
// key reconciled.
type Handler[T metav1.Object, K comparable] struct {
	// Enqueue receives the keys, typically Controller.Enqueue.
	Enqueue func(K)
	// Keys maps an object to the keys it affects; required.
	Keys func(obj T) []K
	// Filter, when set, ignores objects for which it returns false; on
	// update the event passes when either version passes.
	Filter func(obj T) bool
	// Changed, when set, drops updates it returns false for, e.g. updates
	// that only touch status when the controller reads only spec.
	Changed func(oldObj, newObj T) bool
}

var _ cache.ResourceEventHandler = Handler[metav1.Object, string]{}

// OnAdd implements cache.ResourceEventHandler.
func (h Handler[T, K]) OnAdd(obj any, _ bool) {
	if typed, ok := Unwrap[T](obj); ok && h.passes(typed) {
		h.enqueue(typed)
	}
}

// OnUpdate implements cache.ResourceEventHandler.
func (h Handler[T, K]) OnUpdate(oldObj, newObj any) {
	oldTyped, okOld := Unwrap[T](oldObj)
	newTyped, okNew := Unwrap[T](newObj)
	if !okOld || !okNew {
		return
	}
	if oldTyped.GetResourceVersion() == newTyped.GetResourceVersion() {
		return // periodic resync: nothing changed
	}
	if !h.passes(oldTyped) && !h.passes(newTyped) {
		return
	}
	if h.Changed != nil && !h.Changed(oldTyped, newTyped) {
		return
	}
	h.enqueue(oldTyped, newTyped)
}

// OnDelete implements cache.ResourceEventHandler.
func (h Handler[T, K]) OnDelete(obj any) {
	if typed, ok := Unwrap[T](obj); ok && h.passes(typed) {
		h.enqueue(typed)
	}
}

func (h Handler[T, K]) passes(obj T) bool {
	return h.Filter == nil || h.Filter(obj)
}

func (h Handler[T, K]) enqueue(objs ...T) {
	seen := sets.New[K]()
	for _, obj := range objs {
		for _, key := range h.Keys(obj) {
			if !seen.Has(key) {
				seen.Insert(key)
				h.Enqueue(key)
			}
		}
	}
}
