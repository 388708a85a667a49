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

package podspec

import (
	"encoding/json"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/lastapplied"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
)

// AnnotationLastApplied (kubeoceanv1alpha1) on a physical pod holds what
// the controller last wrote of the fields it keeps in step with the
// virtual pod (AppliedState, JSON). Changes are computed as last applied →
// desired and applied to the live pod, as kubectl apply does, so labels,
// annotations or images that webhooks or people set on the physical side
// stay until the virtual pod itself changes that key. It leaves out the
// enforced annotations, which name the virtual pod and are put back
// whatever was applied before, so the pods of one workload record the same
// text and the syncer's cache holds it once.
const AnnotationLastApplied = kubeoceanv1alpha1.AnnotationLastApplied

// AppliedState is the part of a physical pod that follows the virtual pod
// after creation: what Kubernetes lets change on a running pod.
type AppliedState struct {
	Labels                map[string]string `json:"labels,omitempty"`
	Annotations           map[string]string `json:"annotations,omitempty"`
	ActiveDeadlineSeconds *int64            `json:"activeDeadlineSeconds,omitempty"`
	// Images by "containers/<name>" and "initContainers/<name>".
	Images map[string]string `json:"images,omitempty"`
}

func (s AppliedState) equal(o AppliedState) bool {
	return maps.Equal(s.Labels, o.Labels) && maps.Equal(s.Annotations, o.Annotations) &&
		ptr.Equal(s.ActiveDeadlineSeconds, o.ActiveDeadlineSeconds) && maps.Equal(s.Images, o.Images)
}

// encode is s as AnnotationLastApplied records it.
func (s AppliedState) encode() string {
	data, err := json.Marshal(s.recorded())
	if err != nil {
		panic(err) // maps of strings and an integer always encode
	}
	return string(data)
}

// recorded is s without the enforced annotations: what
// AnnotationLastApplied records of it.
func (s AppliedState) recorded() AppliedState {
	annotations := make(map[string]string, len(s.Annotations))
	for k, v := range s.Annotations {
		if !enforcedAnnotation(k) {
			annotations[k] = v
		}
	}
	s.Annotations = annotations
	return s
}

// lastApplied reads AnnotationLastApplied, as recorded (a record of an
// older version, with the enforced annotations, reads as if without); a
// missing or broken one reads as nothing applied, so every desired key is
// written once.
func lastApplied(pod *corev1.Pod) AppliedState {
	var s AppliedState
	if data, ok := pod.Annotations[AnnotationLastApplied]; ok {
		if err := json.Unmarshal([]byte(data), &s); err != nil {
			return AppliedState{}
		}
	}
	return s.recorded()
}

// desiredState is what the physical pod of virtual should carry: the
// virtual pod's labels in Kubeocean's form (tenantmeta: each under a key of
// Kubeocean's domain, the ones allowed also as they are) with the identity
// of owner (managed-by, cluster ID, binding UID) and the virtual namespace;
// its annotations kept as JSON (the allowed ones also as they are) with the
// mapping back to it; its deadline and images.
func DesiredState(virtual *corev1.Pod, owner ownership.Owner, allowed allowances.Set) AppliedState {
	translator := tenantmeta.Translator{LabelAllowed: allowed.LabelKey, AnnotationAllowed: allowed.AnnotationKey}
	labels := translator.Labels(virtual.Labels)
	owner.Stamp(labels)
	labels[kubeoceanv1alpha1.LabelVirtualNamespace] = virtual.Namespace

	annotations := translator.Annotations(virtual.Labels, podidentity.TenantAnnotations(virtual))
	annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace] = virtual.Namespace
	annotations[kubeoceanv1alpha1.AnnotationVirtualPodName] = virtual.Name
	annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = string(virtual.UID)
	return AppliedState{
		Labels:                labels,
		Annotations:           annotations,
		ActiveDeadlineSeconds: virtual.Spec.ActiveDeadlineSeconds,
		Images:                ImagesOf(&virtual.Spec),
	}
}

// ImagesOf are the images of the containers of spec, by kind and name.
func ImagesOf(spec *corev1.PodSpec) map[string]string {
	images := make(map[string]string, len(spec.InitContainers)+len(spec.Containers))
	for _, c := range spec.InitContainers {
		images["initContainers/"+c.Name] = c.Image
	}
	for _, c := range spec.Containers {
		images["containers/"+c.Name] = c.Image
	}
	return images
}

// enforced keys tie a physical pod to the controller and to its virtual
// pod; unlike the rest they are put back when someone edits them.
// The identity labels are among them: a pod of an older version that lacks
// them gets them on its first update (adoption), and so does the virtual
// namespace label, on which Service mirrors select.
func enforcedLabel(key string) bool {
	switch key {
	case kubeoceanv1alpha1.LabelManagedBy, kubeoceanv1alpha1.LabelClusterID, kubeoceanv1alpha1.LabelBindingUID,
		kubeoceanv1alpha1.LabelVirtualNamespace:
		return true
	}
	return false
}

func enforcedAnnotation(key string) bool {
	switch key {
	case kubeoceanv1alpha1.AnnotationVirtualPodNamespace, kubeoceanv1alpha1.AnnotationVirtualPodName, kubeoceanv1alpha1.AnnotationVirtualPodUID:
		return true
	}
	return false
}

// updatePatch is the strategic merge patch that carries the changes of the
// virtual pod since AnnotationLastApplied to the physical pod, or nil when
// there are none. It names the physical pod's UID, so it fails on a pod
// recreated under the same name. A pod of a version that copied the
// tenant's labels and annotations as they were records them as applied:
// its first patch removes them and writes their translated form, in place.
func UpdatePatch(physical *corev1.Pod, desired AppliedState) []byte {
	last := lastApplied(physical)
	labels := mergeKeys(physical.Labels, last.Labels, desired.Labels, enforcedLabel)
	annotations := mergeKeys(physical.Annotations, last.Annotations, desired.Annotations, enforcedAnnotation)
	if !last.equal(desired.recorded()) {
		annotations[AnnotationLastApplied] = ptr.To(desired.encode())
	}
	spec := map[string]any{}
	if deadline := mergeDeadline(physical.Spec.ActiveDeadlineSeconds, last.ActiveDeadlineSeconds, desired.ActiveDeadlineSeconds); deadline != nil {
		spec["activeDeadlineSeconds"] = *deadline
	}
	if images := mergeImages(physical.Spec.InitContainers, "initContainers/", last.Images, desired.Images); len(images) > 0 {
		spec["initContainers"] = images
	}
	if images := mergeImages(physical.Spec.Containers, "containers/", last.Images, desired.Images); len(images) > 0 {
		spec["containers"] = images
	}
	if len(labels) == 0 && len(annotations) == 0 && len(spec) == 0 {
		return nil
	}
	metadata := map[string]any{"uid": physical.UID}
	if len(labels) > 0 {
		metadata["labels"] = labels
	}
	if len(annotations) > 0 {
		metadata["annotations"] = annotations
	}
	patch := map[string]any{"metadata": metadata}
	if len(spec) > 0 {
		patch["spec"] = spec
	}
	data, err := json.Marshal(patch)
	if err != nil {
		panic(err) // strings, integers and a UID always encode
	}
	return data
}

// mergeKeys is the patch of one string map (see lastapplied.MergeKeys).
func mergeKeys(current, last, desired map[string]string, enforced func(string) bool) map[string]*string {
	return lastapplied.MergeKeys(current, last, desired, enforced)
}

// mergeDeadline is the activeDeadlineSeconds to write, or nil. Kubernetes
// only lets a deadline be set or shortened, and the virtual pod's changed:
// it is written unless the physical pod already has one at least as short.
func mergeDeadline(current, last, desired *int64) *int64 {
	if desired == nil || ptr.Equal(last, desired) {
		return nil
	}
	if current != nil && *current <= *desired {
		return nil
	}
	return desired
}

// mergeImages lists, as strategic-merge entries keyed by name, the
// containers whose image changed on the virtual pod since last applied.
func mergeImages(containers []corev1.Container, prefix string, last, desired map[string]string) []map[string]string {
	var out []map[string]string
	for _, c := range containers {
		image, ok := desired[prefix+c.Name]
		if !ok || last[prefix+c.Name] == image || c.Image == image {
			continue
		}
		out = append(out, map[string]string{"name": c.Name, "image": image})
	}
	return out
}
