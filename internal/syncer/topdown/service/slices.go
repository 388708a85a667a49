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

package service

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

// PodTarget tells, for a virtual pod an endpoint refers to, whether it
// runs on this binding and then the name of its physical pod; ok false
// means the pod is elsewhere (another binding, the virtual cluster's own
// nodes) or unknown, and its address is not reachable from this physical
// cluster.
type PodTarget func(namespace, name string) (physicalName string, ok bool)

// MirrorSlices are the physical EndpointSlices of mirror for the
// EndpointSlices of its virtual Service (which has no selector): one each,
// named by the physical name rule, keeping the endpoints reachable from the
// physical cluster. An endpoint without a pod behind it (an address the
// user wrote) is kept as it is; one of a pod of this binding is kept with
// the physical pod as its target (its IP is the physical pod's: the
// virtual pod's status is copied from it); one of any other pod is left
// out. Node names and zone hints name virtual nodes and are dropped.
func MirrorSlices(mirror *corev1.Service, virtual []*discoveryv1.EndpointSlice, owner ownership.Owner, pods PodTarget) []*discoveryv1.EndpointSlice {
	out, _ := mirrorSlices(mirror, virtual, owner, pods, nil)
	return out
}

// mirrorSlices is MirrorSlices that also keeps, as addresses without a
// target, the endpoints of other pods whose node places says joined, and
// counts the ready endpoints it leaves out. places may be nil: nothing is
// joined, and the endpoints left out are counted as on no known node.
func mirrorSlices(mirror *corev1.Service, virtual []*discoveryv1.EndpointSlice, owner ownership.Owner, pods PodTarget, places *Places) ([]*discoveryv1.EndpointSlice, elsewhere) {
	out := make([]*discoveryv1.EndpointSlice, 0, len(virtual))
	left := elsewhere{}
	namespace := mirror.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace]
	for _, v := range virtual {
		slice := mirrorSlice(mirror, owner, kubeoceanv1alpha1.PhysicalName(namespace, v.Name), v.AddressType, v.Ports)
		for _, e := range v.Endpoints {
			if kept, ok := reachableEndpoint(e, namespace, mirror.Namespace, pods); ok {
				slice.Endpoints = append(slice.Endpoints, kept)
				continue
			}
			place := placement{where: whereUnknown}
			if places != nil {
				place = places.of(e.NodeName)
			}
			switch {
			case place.joined:
				slice.Endpoints = append(slice.Endpoints, joinedEndpoint(e))
			case !place.here && ready(e):
				left.add(place.where)
			}
		}
		out = append(out, slice)
	}
	return out, left
}

// mirrorSlice is an empty EndpointSlice of mirror, written by the syncer.
func mirrorSlice(mirror *corev1.Service, owner ownership.Owner, name string, addressType discoveryv1.AddressType, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	labels := owner.Stamp(map[string]string{
		discoveryv1.LabelServiceName: mirror.Name,
		discoveryv1.LabelManagedBy:   kubeoceanv1alpha1.EndpointSliceManagedBySyncer,
	})
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mirror.Namespace,
			Name:      name,
			Labels:    labels,
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualName:      mirror.Annotations[kubeoceanv1alpha1.AnnotationVirtualName],
				kubeoceanv1alpha1.AnnotationVirtualNamespace: mirror.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace],
			},
		},
		AddressType: addressType,
		Ports:       slicePorts(ports),
		Endpoints:   []discoveryv1.Endpoint{},
	}
	if mirror.UID != "" {
		// The physical garbage collector removes the slices with
		// their mirror, whatever becomes of the syncer.
		slice.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Service", Name: mirror.Name, UID: mirror.UID,
		}}
	}
	return slice
}

// joinedEndpoint is the endpoint of a pod of a joined network: its address
// (the virtual pod's IP, which is the pod's real one), conditions and
// hostname, with no target (the pod is not in this physical cluster) and
// no node or zone (they name virtual nodes).
func joinedEndpoint(e discoveryv1.Endpoint) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  slices.Clone(e.Addresses),
		Conditions: *e.Conditions.DeepCopy(),
		Hostname:   e.Hostname,
	}
}

func reachableEndpoint(e discoveryv1.Endpoint, namespace, mountNamespace string, pods PodTarget) (discoveryv1.Endpoint, bool) {
	e = *e.DeepCopy()
	e.NodeName, e.Zone, e.Hints = nil, nil, nil
	ref := e.TargetRef
	if ref == nil || ref.Kind != "Pod" {
		e.TargetRef = nil
		return e, true
	}
	podNamespace := ref.Namespace
	if podNamespace == "" {
		podNamespace = namespace
	}
	physical, ok := pods(podNamespace, ref.Name)
	if !ok {
		return e, false
	}
	e.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: mountNamespace, Name: physical}
	return e, true
}

func slicePorts(ports []discoveryv1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, len(ports))
	for i, p := range ports {
		out[i] = *p.DeepCopy()
		if out[i].Protocol == nil {
			out[i].Protocol = ptr.To(corev1.ProtocolTCP)
		}
	}
	return out
}

// applySlice writes desired onto a copy of current and tells whether
// anything changed.
func applySlice(current, desired *discoveryv1.EndpointSlice) (*discoveryv1.EndpointSlice, bool) {
	updated := current.DeepCopy()
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	maps.Copy(updated.Labels, desired.Labels)
	if updated.Annotations == nil {
		updated.Annotations = map[string]string{}
	}
	maps.Copy(updated.Annotations, desired.Annotations)
	updated.Ports, updated.Endpoints = desired.Ports, desired.Endpoints
	if len(desired.OwnerReferences) > 0 {
		updated.OwnerReferences = desired.OwnerReferences
	}
	changed := !equality.Semantic.DeepEqual(current.Ports, updated.Ports) ||
		!equality.Semantic.DeepEqual(current.Endpoints, updated.Endpoints) ||
		!equality.Semantic.DeepEqual(current.Labels, updated.Labels) ||
		!equality.Semantic.DeepEqual(current.Annotations, updated.Annotations) ||
		!equality.Semantic.DeepEqual(current.OwnerReferences, updated.OwnerReferences)
	return updated, changed
}
