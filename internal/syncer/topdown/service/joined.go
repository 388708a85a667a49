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
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

// maxEndpointsPerSlice is the EndpointSlice API's limit.
const maxEndpointsPerSlice = 1000

// JoinedSlices are the EndpointSlices the syncer writes for the mirror of
// a virtual Service with a selector, from the virtual cluster's own
// EndpointSlices of it: the physical EndpointSlice controller fills the
// mirror with the binding's own pods only, so the endpoints of pods whose
// node places says joined are written here, with their addresses (the
// virtual pods' IPs, which are the pods' real ones) and conditions, one
// slice per address type and port set, named <mirror>-joined-<n>. The
// binding's own pods are left to the physical controller. It also counts
// the ready endpoints neither holds, by place.
func JoinedSlices(mirror *corev1.Service, virtual []*discoveryv1.EndpointSlice, owner ownership.Owner, pods PodTarget, places *Places) ([]*discoveryv1.EndpointSlice, map[string]int) {
	namespace := mirror.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace]
	type group struct {
		addressType discoveryv1.AddressType
		ports       []discoveryv1.EndpointPort
		endpoints   []discoveryv1.Endpoint
	}
	groups := map[string]*group{}
	left := elsewhere{}
	for _, v := range virtual {
		for _, e := range v.Endpoints {
			if onBinding(e, namespace, pods) {
				continue
			}
			place := places.of(e.NodeName)
			switch {
			case place.here:
			case place.joined:
				key := string(v.AddressType) + "|" + portsKey(v.Ports)
				g, ok := groups[key]
				if !ok {
					g = &group{addressType: v.AddressType, ports: v.Ports}
					groups[key] = g
				}
				g.endpoints = append(g.endpoints, joinedEndpoint(e))
			case ready(e):
				left.add(place.where)
			}
		}
	}
	var out []*discoveryv1.EndpointSlice
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		slices.SortFunc(g.endpoints, func(a, b discoveryv1.Endpoint) int {
			return cmp.Compare(strings.Join(a.Addresses, ","), strings.Join(b.Addresses, ","))
		})
		for chunk := range slices.Chunk(g.endpoints, maxEndpointsPerSlice) {
			name := fmt.Sprintf("%s%s-%d", mirror.Name, kubeoceanv1alpha1.EndpointSliceJoinedSuffix, len(out))
			slice := mirrorSlice(mirror, owner, name, g.addressType, g.ports)
			slice.Endpoints = chunk
			out = append(out, slice)
		}
	}
	return out, left
}

// onBinding tells an endpoint of a pod the binding runs, which the mirror
// holds through its physical pod.
func onBinding(e discoveryv1.Endpoint, namespace string, pods PodTarget) bool {
	ref := e.TargetRef
	if ref == nil || ref.Kind != "Pod" {
		return false
	}
	_, ok := pods(cmp.Or(ref.Namespace, namespace), ref.Name)
	return ok
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%s/%d/%s;", ptr.Deref(p.Name, ""), ptr.Deref(p.Protocol, corev1.ProtocolTCP),
			ptr.Deref(p.Port, 0), ptr.Deref(p.AppProtocol, ""))
	}
	return b.String()
}
