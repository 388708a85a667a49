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

package kubeletapi

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// requestError is an answer to a request that must not reach the physical
// cluster; Message says why, to the user reading kubectl's output.
type requestError struct {
	Code    int
	Message string
}

func (e *requestError) Error() string { return e.Message }

func notFound(format string, args ...any) error {
	return &requestError{Code: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}

// physicalPod is where a virtual pod runs.
type physicalPod struct {
	Namespace, Name string
	// Node is the virtual node the pod is bound to.
	Node string
}

// resolver maps virtual pods on the nodes of one binding to the physical
// pods that run them, from the caches only: a pod the syncer does not know
// never causes a request to the physical cluster.
//
// The physical pod is the one this binding made for the virtual pod: named
// by the physical name rule in the mount namespace, and recording the
// virtual pod's namespace, name and UID, which only the syncer writes on
// physical pods. The virtual pod's mapping annotations are not trusted:
// whoever may edit the pod can set them, and naming another tenant's
// physical pod there must not reach it.
type resolver struct {
	virtualPods  corelisters.PodLister
	physicalPods corelisters.PodLister
	// physicalPodsOn, when set, lists the physical pods on a node
	// (Options.PhysicalPodsOn).
	physicalPodsOn func(physicalNode string) []metav1.Object
	// mountNamespace holds every physical pod of the binding.
	mountNamespace string
	// recorder, when set, records a refused mapping on the virtual pod.
	recorder record.EventRecorder
}

// pod resolves the virtual pod namespace/name served on node; container,
// when not "", must be one of its containers.
func (r *resolver) pod(node, namespace, name, container string) (physicalPod, error) {
	pod, err := r.virtualPods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The cache holds only the pods on the binding's virtual nodes: a
		// pod elsewhere is not found either.
		return physicalPod{}, notFound("pod %s/%s not found on node %s", namespace, name, node)
	}
	if err != nil {
		return physicalPod{}, err
	}
	if pod.Spec.NodeName != node {
		return physicalPod{}, notFound("pod %s/%s does not run on node %s", namespace, name, node)
	}
	target := physicalPod{Namespace: r.mountNamespace, Name: kubeoceanv1alpha1.PhysicalName(namespace, name), Node: node}
	if claimed := claimedTarget(pod); claimed != (physicalPod{}) && (claimed.Namespace != target.Namespace || claimed.Name != target.Name) {
		if r.recorder != nil {
			r.recorder.Eventf(pod, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPhysicalPodMappingRefused,
				"Kubelet API request refused: the pod's annotations name physical pod %s/%s, which Kubeocean did not create for this pod",
				claimed.Namespace, claimed.Name)
		}
		return physicalPod{}, notFound("pod %s/%s has not been created in the physical cluster", namespace, name)
	}
	if !r.isTwin(target, pod) {
		return physicalPod{}, notFound("pod %s/%s has not been created in the physical cluster yet", namespace, name)
	}
	if container != "" && !hasContainer(pod, container) {
		return physicalPod{}, notFound("container %s is not valid for pod %s/%s", container, namespace, name)
	}
	return target, nil
}

// claimedTarget is the physical pod the virtual pod's mapping annotations
// name, or the zero value when they name none.
func claimedTarget(pod *corev1.Pod) physicalPod {
	return physicalPod{
		Namespace: pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace],
		Name:      pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName],
	}
}

// isTwin reports whether the cache holds the physical pod target and it
// was made for virtual: it records the virtual pod's namespace, name and
// UID. A pod the cache does not hold must not cost a physical request, and
// one left by an earlier virtual pod of the same name is not this pod's.
func (r *resolver) isTwin(target physicalPod, virtual *corev1.Pod) bool {
	physical, err := r.physicalPods.Pods(target.Namespace).Get(target.Name)
	if err != nil {
		return false
	}
	recorded := physical.Annotations
	return recorded[kubeoceanv1alpha1.AnnotationVirtualPodUID] == string(virtual.UID) &&
		recorded[kubeoceanv1alpha1.AnnotationVirtualPodNamespace] == virtual.Namespace &&
		recorded[kubeoceanv1alpha1.AnnotationVirtualPodName] == virtual.Name
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// virtualRef names the virtual pod of a physical one.
type virtualRef struct {
	Namespace, Name, UID string
}

// virtualPodsOn maps the binding's physical pods on physicalNode (by
// namespace/name) to their virtual pods; pods of anyone else are absent.
func (r *resolver) virtualPodsOn(physicalNode string) (map[string]virtualRef, error) {
	var pods []metav1.Object
	if r.physicalPodsOn != nil {
		pods = r.physicalPodsOn(physicalNode)
	} else {
		all, err := r.physicalPods.Pods(r.mountNamespace).List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, p := range all {
			if p.Spec.NodeName == physicalNode {
				pods = append(pods, p)
			}
		}
	}
	out := map[string]virtualRef{}
	for _, p := range pods {
		annotations := p.GetAnnotations()
		ref := virtualRef{
			Namespace: annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace],
			Name:      annotations[kubeoceanv1alpha1.AnnotationVirtualPodName],
			UID:       annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID],
		}
		if ref.Name != "" && p.GetNamespace() == r.mountNamespace {
			out[p.GetNamespace()+"/"+p.GetName()] = ref
		}
	}
	return out, nil
}
