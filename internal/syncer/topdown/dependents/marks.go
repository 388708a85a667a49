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
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// markValue is the value of the synced-by and used-by-pv labels.
const markValue = "true"

// location is where a physical copy lives; namespace is "" for a PV.
type location struct{ namespace, name string }

// The virtual side: marks that say an object is copied to a physical
// cluster and must not go before its copy. Several bindings may copy the
// same object: the synced-by label and the finalizer are per cluster, the
// other marks are shared and only removed by the last binding to let go.

// mark adds the marks of clusterID to obj, a copy of the virtual object;
// false when they were all there already. The mapping annotations are
// informational (the controllers derive a copy's location from the naming
// rules; only a release also looks where they point, and deletes there
// nothing but this binding's own copy of the object, see
// deleteCopyElsewhere): they are written when missing and never overwritten, so two bindings
// with different mount namespaces do not take turns rewriting them.
func mark(obj metav1.Object, clusterID string, at location, usedByPV bool) bool {
	labels := maps.Clone(obj.GetLabels())
	if labels == nil {
		labels = map[string]string{}
	}
	labels[kubeoceanv1alpha1.SyncedByLabel(clusterID)] = markValue
	labels[kubeoceanv1alpha1.LabelManagedBy] = kubeoceanv1alpha1.ManagedByKubeocean
	if usedByPV {
		labels[kubeoceanv1alpha1.LabelUsedByPV] = markValue
	}
	annotations := maps.Clone(obj.GetAnnotations())
	if annotations == nil {
		annotations = map[string]string{}
	}
	if _, ok := annotations[kubeoceanv1alpha1.AnnotationPhysicalName]; !ok {
		annotations[kubeoceanv1alpha1.AnnotationPhysicalName] = at.name
		if at.namespace != "" {
			annotations[kubeoceanv1alpha1.AnnotationPhysicalNamespace] = at.namespace
		}
	}
	finalizer := kubeoceanv1alpha1.Finalizer(clusterID)
	changed := !maps.Equal(labels, obj.GetLabels()) || !maps.Equal(annotations, obj.GetAnnotations()) ||
		!slices.Contains(obj.GetFinalizers(), finalizer)
	if !changed {
		return false
	}
	obj.SetLabels(labels)
	obj.SetAnnotations(annotations)
	if !slices.Contains(obj.GetFinalizers(), finalizer) {
		obj.SetFinalizers(append(slices.Clone(obj.GetFinalizers()), finalizer))
	}
	return true
}

// unmark removes the marks of clusterID from obj, a copy of the virtual
// object, so an object no pod needs looks untouched again; false when
// there was nothing to remove. The shared marks go only when no other
// binding's synced-by label remains. On an object being deleted only the
// finalizer goes: it is all that still holds the object.
func unmark(obj metav1.Object, clusterID string) bool {
	finalizer := kubeoceanv1alpha1.Finalizer(clusterID)
	finalizers := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == finalizer })
	changed := len(finalizers) != len(obj.GetFinalizers())
	if changed {
		obj.SetFinalizers(finalizers)
	}
	if obj.GetDeletionTimestamp() != nil {
		return changed
	}

	labels := maps.Clone(obj.GetLabels())
	delete(labels, kubeoceanv1alpha1.SyncedByLabel(clusterID))
	annotations := maps.Clone(obj.GetAnnotations())
	if !syncedByAnyone(labels) {
		delete(labels, kubeoceanv1alpha1.LabelManagedBy)
		delete(labels, kubeoceanv1alpha1.LabelUsedByPV)
		delete(annotations, kubeoceanv1alpha1.AnnotationPhysicalName)
		delete(annotations, kubeoceanv1alpha1.AnnotationPhysicalNamespace)
	}
	if !maps.Equal(labels, obj.GetLabels()) {
		obj.SetLabels(labels)
		changed = true
	}
	if !maps.Equal(annotations, obj.GetAnnotations()) {
		obj.SetAnnotations(annotations)
		changed = true
	}
	return changed
}

// IsMarked tells whether the virtual object carries the marks of
// clusterID that hold it: the synced-by label and the finalizer.
func IsMarked(obj metav1.Object, clusterID string) bool {
	_, labelled := obj.GetLabels()[kubeoceanv1alpha1.SyncedByLabel(clusterID)]
	return labelled && slices.Contains(obj.GetFinalizers(), kubeoceanv1alpha1.Finalizer(clusterID))
}

func syncedByAnyone(labels map[string]string) bool {
	for k := range labels {
		if strings.HasPrefix(k, kubeoceanv1alpha1.LabelSyncedByPrefix) {
			return true
		}
	}
	return false
}

// The physical side: a copy carries the virtual object's labels plus
// managed-by, and annotations naming the virtual object it was made for.
// Those annotations decide ownership: an object at the mapped name without
// them is someone else's and is never overwritten.

// physicalLabels are the labels of the copy of an object labelled virtual:
// the same, without the synced-by marks (bookkeeping of the virtual side
// that would only confuse selectors there), plus managed-by.
func physicalLabels(virtual map[string]string) map[string]string {
	labels := make(map[string]string, len(virtual)+1)
	for k, v := range virtual {
		if !strings.HasPrefix(k, kubeoceanv1alpha1.LabelSyncedByPrefix) {
			labels[k] = v
		}
	}
	labels[kubeoceanv1alpha1.LabelManagedBy] = kubeoceanv1alpha1.ManagedByKubeocean
	return labels
}

// mappingAnnotations name the virtual object namespace/name on its copy;
// a PV's copy (namespace "") names only the PV.
func mappingAnnotations(namespace, name string) map[string]string {
	annotations := map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: name}
	if namespace != "" {
		annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] = namespace
	}
	return annotations
}

// owns tells whether physical is this binding's copy of the virtual object
// namespace/name: it names that object and carries the binding's identity.
// Only such a copy is ever deleted; one of another binding, even of another
// virtual cluster with the same cluster ID and mount namespace, names the
// same virtual object but carries another binding UID.
func (s *Syncer) owns(physical metav1.Object, namespace, name string) bool {
	return s.owner.Owns(physical) && ownedBy(physical, namespace, name)
}

// mayUpdate tells whether the write path may bring physical in line with
// the virtual object namespace/name, which the caller has just marked for
// this binding: our copy, or one that names the object and carries no
// binding identity (made by an older version, or stripped of its labels),
// which the update adopts by stamping the identity. An object with another
// binding's identity is adopted only when that binding is a proven
// predecessor of this one (see ownership.Predecessors): a binding recreated
// under the same name takes its copies over rather than meeting a conflict
// at each. Deletion never adopts: a copy that no use brings through here is
// left alone.
func (s *Syncer) mayUpdate(physical metav1.Object, namespace, name string) bool {
	if !ownedBy(physical, namespace, name) {
		return false
	}
	_, stamped := physical.GetLabels()[kubeoceanv1alpha1.LabelBindingUID]
	return !stamped || s.owner.Owns(physical) || s.predecessors.Proven(physical)
}

// blockerDetail says, for a conflict event, whose physical is when it is
// another binding's under this cluster ID, and how an operator releases
// it; "" otherwise.
func (s *Syncer) blockerDetail(physical metav1.Object) string {
	uid, ok := s.owner.Sibling(physical)
	if !ok {
		return ""
	}
	return fmt.Sprintf(" (it carries binding UID %s under cluster ID %s: a binding still deleting, another virtual cluster's, or an earlier binding no pod of this binding proves; "+
		"if no binding of any virtual cluster has that UID, delete it in the physical cluster)", uid, s.owner.ClusterID)
}

// ownedBy tells whether physical was made for the virtual object
// namespace/name.
func ownedBy(physical metav1.Object, namespace, name string) bool {
	annotations := physical.GetAnnotations()
	return name != "" && annotations[kubeoceanv1alpha1.AnnotationVirtualName] == name &&
		annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] == namespace
}

// VirtualKeyOf is the key of the virtual object a physical copy was made
// for, read from its mapping annotations; false when it names none.
// namespaced tells whether the kind is namespaced (all but PVs).
func VirtualKeyOf(physical metav1.Object, namespaced bool) (cache.ObjectName, bool) {
	annotations := physical.GetAnnotations()
	key := cache.ObjectName{
		Namespace: annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace],
		Name:      annotations[kubeoceanv1alpha1.AnnotationVirtualName],
	}
	if key.Name == "" || namespaced != (key.Namespace != "") {
		return cache.ObjectName{}, false
	}
	return key, true
}
