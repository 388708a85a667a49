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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// object is a typed Kubernetes object, e.g. *corev1.ConfigMap.
type object interface {
	metav1.Object
	runtime.Object
}

// getter is the read half of a typed lister, for one namespace.
type getter[T any] interface {
	Get(name string) (T, error)
}

// client is the part of a typed client the engine uses, for one namespace.
type client[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// side reaches one kind of object in one cluster.
type side[T any] struct {
	// cache is the lister; nil when the objects are not cached (CSI
	// secrets outside the mount namespace), so they are read live.
	cache  func(namespace string) getter[T]
	client func(namespace string) client[T]
}

// content is what differs between kinds: how a copy is built from the
// virtual object and compared with the physical one.
type content[T object] struct {
	// build returns the copy's content (spec, data); metadata is the
	// engine's.
	build func(virtual T) T
	// differs tells whether the content of actual differs from desired in
	// what Kubeocean copies.
	differs func(actual, desired T) bool
	// apply copies that content from desired into actual, a copy.
	apply func(actual, desired T)
	// replace, when set, tells that actual cannot take desired's content
	// in place (immutable objects, a changed Secret type): it is deleted
	// and created again.
	replace func(actual, desired T) bool
	// unsupported, when set, returns why a virtual object must never be
	// copied (a NotReadyError reason), or "".
	unsupported func(virtual T) string
}

// kind is one kind of dependent object on both sides.
type kind[T object] struct {
	name              string
	virtual, physical side[T]
	content           content[T]
	// created stands in for the physical cache until it shows a copy
	// just created (see remembering); nil for kinds not cached.
	created *controller.Expectations[location, T]
}

func deepCopy[T object](obj T) T { return obj.DeepCopyObject().(T) }

func (s side[T]) cached(namespace, name string) (T, error) {
	return s.cache(namespace).Get(name)
}

// lookup reads an object from the cache, or live when there is none.
func (s side[T]) lookup(ctx context.Context, namespace, name string) (T, error) {
	if s.cache != nil {
		return s.cached(namespace, name)
	}
	return s.client(namespace).Get(ctx, name, metav1.GetOptions{})
}

// fresh reads an object from the cache and, on a miss, live: the cache may
// lag behind a write just made, or (on the virtual side) hold only marked
// objects.
func (s side[T]) fresh(ctx context.Context, namespace, name string) (T, error) {
	if s.cache != nil {
		obj, err := s.cached(namespace, name)
		if !apierrors.IsNotFound(err) {
			return obj, err
		}
	}
	return s.client(namespace).Get(ctx, name, metav1.GetOptions{})
}

// virtualObject returns the virtual object namespace/name, ready to be
// copied: it exists, is not being deleted and may be copied at all.
func virtualObject[T object](ctx context.Context, k *kind[T], namespace, name string) (T, error) {
	obj, err := k.virtual.fresh(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return obj, &NotReadyError{Kind: k.name, Namespace: namespace, Name: name, Reason: ReasonNotFound}
	}
	if err != nil {
		return obj, fmt.Errorf("reading virtual %s %s: %w", k.name, objectName(namespace, name), err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return obj, &NotReadyError{Kind: k.name, Namespace: namespace, Name: name, Reason: ReasonDeleting}
	}
	if k.content.unsupported != nil {
		if reason := k.content.unsupported(obj); reason != "" {
			return obj, &NotReadyError{Kind: k.name, Namespace: namespace, Name: name, Reason: reason}
		}
	}
	return obj, nil
}

// updateVirtual writes change onto the virtual object, retrying once on a
// conflict from a live read (the cache often lags behind our own last
// write). change returns false when there is nothing to write.
func updateVirtual[T object](ctx context.Context, k *kind[T], obj T, change func(T) bool) (T, error) {
	namespace, name := obj.GetNamespace(), obj.GetName()
	for attempt := 0; ; attempt++ {
		updated := deepCopy(obj)
		if !change(updated) {
			return obj, nil
		}
		written, err := k.virtual.client(namespace).Update(ctx, updated, metav1.UpdateOptions{})
		if err == nil {
			return written, nil
		}
		if !apierrors.IsConflict(err) || attempt > 0 {
			return obj, fmt.Errorf("updating virtual %s %s: %w", k.name, objectName(namespace, name), err)
		}
		live, err := k.virtual.client(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return obj, fmt.Errorf("re-reading virtual %s %s: %w", k.name, objectName(namespace, name), err)
		}
		obj = live
	}
}

// ensureMarked marks the virtual object before anything is created for it,
// so a crash never leaves a copy whose virtual object does not say so (and
// has no finalizer to clean it up).
func ensureMarked[T object](ctx context.Context, s *Syncer, k *kind[T], obj T, at location, usedByPV bool) (T, error) {
	marked, err := updateVirtual(ctx, k, obj, func(o T) bool {
		// No finalizer may be added to an object being deleted.
		return o.GetDeletionTimestamp() == nil && mark(o, s.clusterID, at, usedByPV)
	})
	if err != nil {
		return marked, err
	}
	if marked.GetDeletionTimestamp() != nil {
		return marked, &NotReadyError{Kind: k.name, Namespace: obj.GetNamespace(), Name: obj.GetName(), Reason: ReasonDeleting}
	}
	return marked, nil
}

// desiredCopy is the physical copy of virtual at at, with the binding's
// identity.
func desiredCopy[T object](s *Syncer, k *kind[T], virtual T, at location) T {
	desired := k.content.build(virtual)
	desired.SetNamespace(at.namespace)
	desired.SetName(at.name)
	labels := s.owner.Stamp(physicalLabels(virtual.GetLabels()))
	desired.SetLabels(labels)
	desired.SetAnnotations(copyAnnotations(virtual.GetNamespace(), virtual.GetName(), labels))
	return desired
}

// ensureCopy makes the physical copy of virtual at at exist and match,
// creating it, updating it or adopting an object that carries our mapping.
// It tells whether the copy it found matched, so that nothing was written.
func ensureCopy[T object](ctx context.Context, s *Syncer, k *kind[T], virtual T, at location) (matched bool, err error) {
	desired := desiredCopy(s, k, virtual, at)
	actual, err := lookupCopy(ctx, s, k, at)
	switch {
	case apierrors.IsNotFound(err):
		return false, createCopy(ctx, s, k, virtual, desired)
	case err != nil:
		return false, fmt.Errorf("reading physical %s %s: %w", k.name, objectName(at.namespace, at.name), err)
	}
	return syncCopy(ctx, s, k, virtual, actual, desired, true)
}

// lookupCopy reads the copy at at from the cache or, while the cache has
// not shown a copy the Syncer just created, as it was created. The memory
// is read first: a copy's event drops it only once the cache holds the
// copy, so one of the two shows it.
func lookupCopy[T object](ctx context.Context, s *Syncer, k *kind[T], at location) (T, error) {
	if k.physical.cache == nil {
		return k.physical.lookup(ctx, at.namespace, at.name)
	}
	created, _, remembered := k.created.GetExpectations(at)
	actual, err := k.physical.cached(at.namespace, at.name)
	switch {
	case err == nil && remembered:
		k.created.CreationObserved(at)
	case apierrors.IsNotFound(err) && remembered:
		return created, nil
	}
	return actual, err
}

// createCopy creates desired; when the name is taken (by a copy the cache
// has not seen yet, or by an object without our label) it looks at what is
// there and adopts it if it carries our mapping.
func createCopy[T object](ctx context.Context, s *Syncer, k *kind[T], virtual, desired T) error {
	logger := klog.FromContext(ctx)
	created, err := k.physical.client(desired.GetNamespace()).Create(ctx, desired, metav1.CreateOptions{})
	switch {
	case err == nil:
		if k.physical.cache != nil {
			// Remembered, then dropped if the cache shows it already: its
			// event may have come before this answer.
			at := locationOf(created)
			k.created.ExpectCreation(at, created)
			if _, err := k.physical.cached(at.namespace, at.name); err == nil {
				k.created.CreationObserved(at)
			}
		}
		logger.V(2).Info("Created physical copy", "kind", k.name, "virtual", klog.KObj(virtual), "physical", klog.KObj(desired))
		return nil
	case apierrors.IsNotFound(err):
		// Creating in a namespace that does not exist.
		return &NotReadyError{Kind: k.name, Namespace: virtual.GetNamespace(), Name: virtual.GetName(), Reason: ReasonPhysicalNamespaceMissing}
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating physical %s %s: %w", k.name, klog.KObj(desired), err)
	}
	actual, err := k.physical.client(desired.GetNamespace()).Get(ctx, desired.GetName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading physical %s %s after a create conflict: %w", k.name, klog.KObj(desired), err)
	}
	_, err = syncCopy(ctx, s, k, virtual, actual, desired, true)
	return err
}

// syncCopy brings an existing physical object in line with desired if it
// is ours, and refuses to touch it if it is not. retry allows one more
// attempt from a live read after a write conflict. It tells whether actual
// matched, so that nothing was written.
func syncCopy[T object](ctx context.Context, s *Syncer, k *kind[T], virtual, actual, desired T, retry bool) (matched bool, err error) {
	logger := klog.FromContext(ctx).WithValues("kind", k.name, "virtual", klog.KObj(virtual), "physical", klog.KObj(actual))
	if !s.mayUpdate(actual, virtual.GetNamespace(), virtual.GetName()) {
		s.recorder.Eventf(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPhysicalNameConflict,
			"Physical %s %s exists and was not made by Kubeocean for this object and binding%s; it is left alone and this %s is not synced",
			k.name, objectName(actual.GetNamespace(), actual.GetName()), s.blockerDetail(actual), k.name)
		return false, &ConflictError{Kind: k.name, Namespace: virtual.GetNamespace(), Name: virtual.GetName(), PhysicalName: actual.GetName()}
	}
	if actual.GetDeletionTimestamp() != nil {
		return false, &NotReadyError{Kind: k.name, Namespace: virtual.GetNamespace(), Name: virtual.GetName(), Reason: ReasonPhysicalCopyTerminating}
	}
	if k.content.replace != nil && k.content.replace(actual, desired) {
		logger.V(2).Info("Content of an immutable physical copy changed; replacing it")
		if err := deletePhysical(ctx, s, k, actual); err != nil {
			return false, err
		}
		return false, createCopy(ctx, s, k, virtual, desired)
	}
	labels, annotations, metadataChanged := mergeMetadata(actual, desired)
	if !metadataChanged && !k.content.differs(actual, desired) {
		return true, nil
	}
	updated := deepCopy(actual)
	updated.SetLabels(labels)
	updated.SetAnnotations(annotations)
	k.content.apply(updated, desired)
	written, err := k.physical.client(actual.GetNamespace()).Update(ctx, updated, metav1.UpdateOptions{})
	switch {
	case err == nil:
		k.created.UpdateExpectation(locationOf(written), written)
		logger.V(2).Info("Updated physical copy")
		return false, nil
	case apierrors.IsConflict(err) && retry:
		live, getErr := k.physical.client(actual.GetNamespace()).Get(ctx, actual.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(getErr) {
			return false, createCopy(ctx, s, k, virtual, desired)
		}
		if getErr != nil {
			return false, fmt.Errorf("re-reading physical %s %s: %w", k.name, klog.KObj(actual), getErr)
		}
		_, err = syncCopy(ctx, s, k, virtual, live, desired, false)
		return false, err
	default:
		return false, fmt.Errorf("updating physical %s %s: %w", k.name, klog.KObj(actual), err)
	}
}

// deletePhysical deletes a physical copy, with its UID as precondition so
// an object recreated under the name in between is left alone. Gone
// already is fine.
func deletePhysical[T object](ctx context.Context, s *Syncer, k *kind[T], actual T) error {
	uid := actual.GetUID()
	k.created.DeleteExpectations(locationOf(actual))
	err := k.physical.client(actual.GetNamespace()).Delete(ctx, actual.GetName(), metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid},
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// Another object took the name; it is not the copy we meant.
		klog.FromContext(ctx).V(2).Info("Physical copy was replaced before it could be deleted", "kind", k.name, "physical", klog.KObj(actual))
		return nil
	case err != nil:
		return fmt.Errorf("deleting physical %s %s: %w", k.name, klog.KObj(actual), err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted physical copy", "kind", k.name, "physical", klog.KObj(actual))
	return nil
}

// deleteCopy deletes the physical copy at at if it is the copy of the
// virtual object namespace/name and not already going.
func deleteCopy[T object](ctx context.Context, s *Syncer, k *kind[T], namespace, name string, at location) error {
	actual, err := k.physical.fresh(ctx, at.namespace, at.name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading physical %s %s: %w", k.name, objectName(at.namespace, at.name), err)
	case !s.owns(actual, namespace, name) || actual.GetDeletionTimestamp() != nil:
		return nil
	}
	return deletePhysical(ctx, s, k, actual)
}

// deleteCopyElsewhere deletes the copy of the virtual object namespace/name
// at the place its mapping annotations record, when that is not at, where
// the naming rules put it now: a copy made before the binding's mount
// namespace changed (which the schema no longer allows, but older bindings
// may have done). The place is read from an annotation anyone may edit, so
// only a copy that carries this binding's identity and names the object is
// deleted there; nothing is cached outside the mount namespace, so it is
// read live.
func deleteCopyElsewhere[T object](ctx context.Context, s *Syncer, k *kind[T], namespace, name string, at location) error {
	virtual, err := k.virtual.fresh(ctx, namespace, name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading virtual %s %s: %w", k.name, objectName(namespace, name), err)
	}
	recorded := location{
		namespace: virtual.GetAnnotations()[kubeoceanv1alpha1.AnnotationPhysicalNamespace],
		name:      virtual.GetAnnotations()[kubeoceanv1alpha1.AnnotationPhysicalName],
	}
	if recorded.namespace == "" || recorded.name == "" || recorded == at {
		return nil
	}
	return deleteCopy(ctx, s, k, namespace, name, recorded)
}

// unmarkVirtual removes our marks from the virtual object, after its
// copies are gone; on an object being deleted that lets it go.
func unmarkVirtual[T object](ctx context.Context, s *Syncer, k *kind[T], namespace, name string) error {
	obj, err := k.virtual.fresh(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading virtual %s %s: %w", k.name, objectName(namespace, name), err)
	}
	_, err = updateVirtual(ctx, k, obj, func(o T) bool { return unmark(o, s.clusterID) })
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// deleteOrphan deletes the cached physical copy of namespace/name when the
// virtual object does not hold it: gone, or no longer marked by us. The
// cache of marked virtual objects may simply lag behind a copy just made,
// so that is confirmed live before anything is deleted.
func deleteOrphan[T object](ctx context.Context, s *Syncer, k *kind[T], namespace, name string, at location) error {
	actual, err := k.physical.cached(at.namespace, at.name)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return err
	case !s.owns(actual, namespace, name) || actual.GetDeletionTimestamp() != nil:
		return nil
	}
	virtual, err := k.virtual.client(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && IsMarked(virtual, s.clusterID):
		return nil
	case err != nil && !apierrors.IsNotFound(err):
		return fmt.Errorf("confirming virtual %s %s: %w", k.name, objectName(namespace, name), err)
	}
	klog.FromContext(ctx).Info("Deleting physical copy whose virtual object no longer holds it", "kind", k.name, "physical", klog.KObj(actual))
	return deletePhysical(ctx, s, k, actual)
}
