package resources

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// PodUsage is the compact form in which the syncer caches the pods it does
// not run: only what a node's capacity needs. A physical cluster may hold
// tens of thousands of such pods; as *corev1.Pod, even slimmed, each costs
// a few kilobytes, as PodUsage a few hundred bytes.
type PodUsage struct {
	metav1.TypeMeta
	// ObjectMeta carries only namespace, name, UID and resourceVersion,
	// which the informer's store and event handlers need.
	metav1.ObjectMeta
	NodeName string
	// HoldsResources is HoldsResources of the pod.
	HoldsResources bool
	// Requests is PodRequests of the pod, in milli-units.
	Requests []Amount
}

// Amount is a quantity of one resource in milli-units.
type Amount struct {
	Name  corev1.ResourceName
	Milli int64
}

var _ runtime.Object = &PodUsage{}

// UsageOf computes the compact form of pod.
func UsageOf(pod *corev1.Pod) *PodUsage {
	requests := PodRequests(pod)
	u := &PodUsage{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		},
		NodeName:       pod.Spec.NodeName,
		HoldsResources: HoldsResources(pod),
		Requests:       make([]Amount, 0, len(requests)),
	}
	for name, q := range requests {
		u.Requests = append(u.Requests, Amount{Name: name, Milli: q.MilliValue()})
	}
	return u
}

// AddTo adds the pod's requests to total in place.
func (u *PodUsage) AddTo(total corev1.ResourceList) {
	for _, a := range u.Requests {
		sum := total[a.Name]
		sum.Add(*resource.NewMilliQuantity(a.Milli, resource.DecimalSI))
		total[a.Name] = sum
	}
}

// SameUsage reports whether two versions of a pod weigh the same on the
// same node.
func (u *PodUsage) SameUsage(other *PodUsage) bool {
	if u.NodeName != other.NodeName || u.HoldsResources != other.HoldsResources || len(u.Requests) != len(other.Requests) {
		return false
	}
	mine := make(map[corev1.ResourceName]int64, len(u.Requests))
	for _, a := range u.Requests {
		mine[a.Name] = a.Milli
	}
	for _, a := range other.Requests {
		if m, ok := mine[a.Name]; !ok || m != a.Milli {
			return false
		}
	}
	return true
}

// DeepCopyObject implements runtime.Object.
func (u *PodUsage) DeepCopyObject() runtime.Object {
	out := *u
	u.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Requests = append([]Amount(nil), u.Requests...)
	return &out
}

// CompactForeignPod is an informer transform storing pods as *PodUsage
// for capacity math. Kubeocean's own pods run on what was lent and must
// never reduce it, so they are stored as holding nothing.
func CompactForeignPod(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	u := UsageOf(pod)
	if pod.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean {
		u.HoldsResources = false
	}
	return u, nil
}
