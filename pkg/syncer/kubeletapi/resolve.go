package kubeletapi

import (
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"

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
type resolver struct {
	virtualPods  corelisters.PodLister
	physicalPods corelisters.PodLister
	// physicalPodsOn, when set, lists the physical pods on a node
	// (Options.PhysicalPodsOn).
	physicalPodsOn func(physicalNode string) []metav1.Object
	// mountNamespace holds every physical pod of the binding.
	mountNamespace string
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
	target := physicalPod{
		Namespace: pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace],
		Name:      pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName],
		Node:      node,
	}
	if target.Name == "" || target.Namespace != r.mountNamespace || !r.physicalExists(target) {
		return physicalPod{}, notFound("pod %s/%s has not been created in the physical cluster yet", namespace, name)
	}
	if container != "" && !hasContainer(pod, container) {
		return physicalPod{}, notFound("container %s is not valid for pod %s/%s", container, namespace, name)
	}
	return target, nil
}

// physicalExists reports whether the physical pod is in the cache: the
// mapping annotations are written before the pod is created, and a pod
// the cache does not hold must not cost a physical request.
func (r *resolver) physicalExists(target physicalPod) bool {
	_, err := r.physicalPods.Pods(target.Namespace).Get(target.Name)
	return err == nil
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
