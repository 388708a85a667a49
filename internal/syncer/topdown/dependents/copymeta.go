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
	"encoding/json"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/lastapplied"
)

// AnnotationLastApplied on a copy holds the labels Kubeocean last wrote on
// it (appliedLabels, JSON), the same annotation and merge as on physical
// pods. The copy's labels follow the virtual object's through a three-way
// merge (package lastapplied): our keys are put back to the virtual
// value whenever they differ, keys we wrote and the virtual object no
// longer has are removed, and keys that other controllers or people put
// on the copy stay. A copy without the annotation (made by an older
// version, or replaced by someone) gets every desired key and keeps the
// rest.
const AnnotationLastApplied = kubeoceanv1alpha1.AnnotationLastApplied

type appliedLabels struct {
	Labels map[string]string `json:"labels,omitempty"`
}

func (a appliedLabels) encode() string {
	data, err := json.Marshal(a)
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return string(data)
}

// lastAppliedLabels reads AnnotationLastApplied; a missing or broken one
// reads as nothing applied.
func lastAppliedLabels(obj metav1.Object) map[string]string {
	var a appliedLabels
	if data, ok := obj.GetAnnotations()[AnnotationLastApplied]; ok {
		if err := json.Unmarshal([]byte(data), &a); err != nil {
			return nil
		}
	}
	return a.Labels
}

// copyAnnotations are the annotations a copy of namespace/name labelled
// labels carries: the mapping back to the virtual object and the record
// of the labels written.
func copyAnnotations(namespace, name string, labels map[string]string) map[string]string {
	annotations := mappingAnnotations(namespace, name)
	annotations[AnnotationLastApplied] = appliedLabels{Labels: labels}.encode()
	return annotations
}

// mergeMetadata returns the labels and annotations actual, a physical
// copy, must carry to be in step with desired, and whether they differ
// from what it has. Desired annotations (the mapping and the last-applied
// record) are always put back; other annotations, which the physical
// cluster adds (PV binding, for one), are kept.
func mergeMetadata(actual, desired metav1.Object) (labels, annotations map[string]string, changed bool) {
	labelPatch := lastapplied.MergeKeys(actual.GetLabels(), lastAppliedLabels(actual), desired.GetLabels(), lastapplied.Always)
	annotationPatch := lastapplied.MergeKeys(actual.GetAnnotations(), nil, desired.GetAnnotations(), lastapplied.Always)
	if len(labelPatch) == 0 && len(annotationPatch) == 0 {
		return actual.GetLabels(), actual.GetAnnotations(), false
	}
	return lastapplied.Apply(actual.GetLabels(), labelPatch), lastapplied.Apply(actual.GetAnnotations(), annotationPatch), true
}

// CopyChanged tells whether an update of a physical copy may concern the
// controller: anything but the resourceVersion, managed fields and labels
// or annotations that are not ours changed. Other controllers labelling
// copies thus cause no reconcile at all, let alone a write.
func CopyChanged[T metav1.Object](oldObj, newObj T) bool {
	ours := maps.Clone(lastAppliedLabels(oldObj))
	if ours == nil {
		ours = map[string]string{}
	}
	maps.Copy(ours, lastAppliedLabels(newObj))
	if len(ours) == 0 {
		// Nothing recorded: every label may be ours.
		return true
	}
	oldTyped, okOld := any(oldObj).(object)
	newTyped, okNew := any(newObj).(object)
	if !okOld || !okNew {
		return true
	}
	return !apiequality.Semantic.DeepEqual(concerning(oldTyped, ours), concerning(newTyped, ours))
}

// concerning is a copy of obj without what CopyChanged ignores; ours are
// the label keys Kubeocean wrote.
func concerning(obj object, ours map[string]string) object {
	out := deepCopy(obj)
	out.SetResourceVersion("")
	out.SetManagedFields(nil)
	labels := map[string]string{}
	for k, v := range obj.GetLabels() {
		if _, ok := ours[k]; ok || identityLabel(k) {
			labels[k] = v
		}
	}
	annotations := map[string]string{}
	for k, v := range obj.GetAnnotations() {
		switch k {
		case kubeoceanv1alpha1.AnnotationVirtualName, kubeoceanv1alpha1.AnnotationVirtualNamespace, AnnotationLastApplied:
			annotations[k] = v
		}
	}
	out.SetLabels(labels)
	out.SetAnnotations(annotations)
	return out
}

// identityLabel tells the labels that make a copy ours; the physical
// informer selects by them.
func identityLabel(key string) bool {
	switch key {
	case kubeoceanv1alpha1.LabelManagedBy, kubeoceanv1alpha1.LabelClusterID, kubeoceanv1alpha1.LabelBindingUID:
		return true
	}
	return false
}
