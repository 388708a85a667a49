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

package compact

import (
	"slices"
	"sync/atomic"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// PhysicalPod is what the cache of the binding's physical pods keeps of
// each: metadata and status whole, and of the spec what the controllers read
// (physicalPodSpec). A *corev1.Pod takes 1.2 KB before anything it points
// to, half of it a spec the physical pod cache left empty; this takes 0.7
// KB.
//
// The controllers read these pods as *corev1.Pod, through PhysicalPods,
// which hands out the Pod of a record (Pod).
type PhysicalPod struct {
	metav1.ObjectMeta
	Spec   physicalPodSpec
	Status corev1.PodStatus
	// pod is the Pod last made of the record, as long as someone holds
	// it: the event handlers of one change, and the reads soon after it,
	// share one.
	pod atomic.Pointer[weak.Pointer[corev1.Pod]]
}

// physicalPodSpec is what slimPhysicalPod keeps of a physical pod's spec.
type physicalPodSpec struct {
	NodeName              string
	ActiveDeadlineSeconds *int64
	// Of each container, only the name and the image.
	InitContainers, Containers []corev1.Container
	EphemeralContainers        []corev1.EphemeralContainer
}

var _ runtime.Object = &PhysicalPod{}

// recordPhysicalPod is the record of pod, which slimPhysicalPod has
// slimmed; it shares what it points to with pod.
func recordPhysicalPod(pod *corev1.Pod) *PhysicalPod {
	return &PhysicalPod{
		ObjectMeta: pod.ObjectMeta,
		Spec: physicalPodSpec{
			NodeName:              pod.Spec.NodeName,
			ActiveDeadlineSeconds: pod.Spec.ActiveDeadlineSeconds,
			InitContainers:        pod.Spec.InitContainers,
			Containers:            pod.Spec.Containers,
			EphemeralContainers:   pod.Spec.EphemeralContainers,
		},
		Status: pod.Status,
	}
}

// Pod is the physical pod the record keeps: what it points to is the
// cache's, read only, as with any cached object.
func (p *PhysicalPod) Pod() *corev1.Pod {
	if last := p.pod.Load(); last != nil {
		if pod := last.Value(); pod != nil {
			return pod
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: p.ObjectMeta,
		Spec: corev1.PodSpec{
			NodeName:              p.Spec.NodeName,
			ActiveDeadlineSeconds: p.Spec.ActiveDeadlineSeconds,
			InitContainers:        p.Spec.InitContainers,
			Containers:            p.Spec.Containers,
			EphemeralContainers:   p.Spec.EphemeralContainers,
		},
		Status: p.Status,
	}
	made := weak.Make(pod)
	p.pod.Store(&made)
	return pod
}

// GetObjectKind implements runtime.Object; a record is only ever cached,
// never sent.
func (p *PhysicalPod) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (p *PhysicalPod) DeepCopyObject() runtime.Object { return recordPhysicalPod(p.Pod().DeepCopy()) }

// asPod is obj as a *corev1.Pod when it is a record; anything else (a Pod
// of an informer without the record, a tombstone's key) stays as it is.
func asPod(obj any) any {
	switch o := obj.(type) {
	case *PhysicalPod:
		return o.Pod()
	case cache.DeletedFinalStateUnknown:
		o.Obj = asPod(o.Obj)
		return o
	}
	return obj
}

// PhysicalPodStatus is the status of a cached physical pod, record or Pod;
// nil for anything else.
func PhysicalPodStatus(obj any) *corev1.PodStatus {
	switch o := obj.(type) {
	case *PhysicalPod:
		return &o.Status
	case *corev1.Pod:
		return &o.Status
	}
	return nil
}

// PhysicalPodsOn lists the cached physical pods (records or Pods) on a
// physical node, as they are cached: for the kubelet API's node stats,
// which read their metadata only.
func PhysicalPodsOn(store cache.Store) func(physicalNode string) []metav1.Object {
	return func(physicalNode string) []metav1.Object {
		var on []metav1.Object
		for _, obj := range store.List() {
			switch o := obj.(type) {
			case *PhysicalPod:
				if o.Spec.NodeName == physicalNode {
					on = append(on, o)
				}
			case *corev1.Pod:
				if o.Spec.NodeName == physicalNode {
					on = append(on, o)
				}
			}
		}
		return on
	}
}

// The informer transform of the binding's physical objects (the syncer's
// bound scope). Nothing writes a physical pod back from the cache: the
// controllers create it from the virtual pod, patch it (three-way merge,
// ephemeral containers) and delete it by UID. So its cached copy needs only
// what they read, and the spec is most of a pod: volumes (the token's
// projected volume, copies), environment, mounts, probes, tolerations.
// Readers: topdown/pod (merge.go: labels, annotations, deadline, images;
// ephemeral.go: ephemeral container names; the mapping annotations and
// status), bottomup/podstatus (status), kubeletapi (node name, annotations),
// unbind, the latency and binding metrics (status), dependents
// (annotations).

// Physical slims the binding's physical pods (slimPhysicalPod), shares the
// repeating strings of them and of the copies beside them, and shares the
// slim container lists, which the pods of one workload have in common; it
// keeps each pod as a PhysicalPod record.
func (t Transforms) Physical(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return t.Pods(obj)
	}
	t.slimPhysical(pod)
	return recordPhysicalPod(pod), nil
}

// slimPhysical is what Physical does to a pod before it records it.
func (t Transforms) slimPhysical(pod *corev1.Pod) {
	slimPhysicalPod(pod)
	t.compactPod(pod)
	pod.Spec.InitContainers = shareContainers(pod.Spec.InitContainers)
	pod.Spec.Containers = shareContainers(pod.Spec.Containers)
}

// slimContainers shares the lists of names and images of slimPhysicalPod.
var slimContainers = newValues(hashNamesAndImages, sameNamesAndImages, func(c []corev1.Container) []corev1.Container { return c })

func shareContainers(containers []corev1.Container) []corev1.Container {
	if len(containers) == 0 {
		return containers
	}
	return slimContainers.Of(containers)
}

func hashNamesAndImages(containers []corev1.Container) uint64 {
	h := uint64(len(containers))
	for _, c := range containers {
		h = (h*prime64^hashString(c.Name))*prime64 ^ hashString(c.Image)
	}
	return h
}

// prime64 is the 64-bit FNV prime, to combine hashes in order.
const prime64 = 1099511628211

func sameNamesAndImages(a, b []corev1.Container) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Container) bool { return x.Name == y.Name && x.Image == y.Image })
}

// slimPhysicalPod keeps of a physical pod's spec the node, the deadline and
// each container's name and image (nothing else: sameNamesAndImages
// compares only those); metadata and status stay whole.
func slimPhysicalPod(pod *corev1.Pod) {
	spec := &pod.Spec
	ephemeral := make([]corev1.EphemeralContainer, len(spec.EphemeralContainers))
	for i, c := range spec.EphemeralContainers {
		ephemeral[i].Name, ephemeral[i].Image = c.Name, c.Image
	}
	*spec = corev1.PodSpec{
		NodeName:              spec.NodeName,
		ActiveDeadlineSeconds: spec.ActiveDeadlineSeconds,
		InitContainers:        namesAndImages(spec.InitContainers),
		Containers:            namesAndImages(spec.Containers),
		EphemeralContainers:   ephemeral,
	}
	if len(ephemeral) == 0 {
		spec.EphemeralContainers = nil
	}
}

func namesAndImages(containers []corev1.Container) []corev1.Container {
	if containers == nil {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i].Name, out[i].Image = c.Name, c.Image
	}
	return out
}
