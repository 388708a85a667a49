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
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/capacity"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

// PodUsage is the compact form in which the syncer caches the pods its
// binding does not run: only what a node's capacity needs. A physical
// cluster may hold tens of thousands of such pods; as *corev1.Pod, even
// slimmed, each costs a few kilobytes, as PodUsage about a hundred bytes
// plus its name.
//
// It keeps only the identity an informer's store and event handlers read
// (namespace, name, resourceVersion) and implements metav1.Object over it
// (below); everything else of a pod's metadata is dropped.
type PodUsage struct {
	Unkept
	Namespace       string
	Name            string
	ResourceVersion string
	NodeName        string
	// HoldsResources is capacity.HoldsResources of the pod.
	HoldsResources bool
	// requests is capacity.PodRequests of the pod, in milli-units, except the pod
	// slot every pod takes, which UsageByNode counts; see Requests.
	requests unique.Handle[requestSet]
	// HostPorts are the host ports the pod binds (hostports.Of); nil for
	// almost every pod.
	HostPorts []hostports.Port
}

// Amount is a quantity of one resource in milli-units.
type Amount struct {
	Name  corev1.ResourceName
	Milli int64
}

var _ runtime.Object = &PodUsage{}

// UsageOf computes the compact form of pod. Namespace and node names repeat
// across many pods and are interned, so each is held once.
func UsageOf(pod *corev1.Pod) *PodUsage {
	requests := capacity.PodRequests(pod)
	u := &PodUsage{
		Namespace:       Intern(pod.Namespace),
		Name:            pod.Name,
		ResourceVersion: pod.ResourceVersion,
		NodeName:        Intern(pod.Spec.NodeName),
		HoldsResources:  capacity.HoldsResources(pod),
		HostPorts:       hostports.Of(pod),
	}
	amounts := make([]Amount, 0, len(requests))
	for name, q := range requests {
		if name != corev1.ResourcePods {
			amounts = append(amounts, Amount{Name: name, Milli: q.MilliValue()})
		}
	}
	u.requests = internRequests(amounts)
	return u
}

// NewPodUsage is the compact form of a pod on node requesting amounts
// (each resource once, in milli-units, without the pod slot).
func NewPodUsage(namespace, name, node string, holdsResources bool, amounts ...Amount) *PodUsage {
	return &PodUsage{Namespace: namespace, Name: name, NodeName: node, HoldsResources: holdsResources, requests: internRequests(amounts)}
}

// Requests is capacity.PodRequests of the pod, in milli-units, sorted by resource
// name, except the pod slot every pod takes.
func (u *PodUsage) Requests() []Amount { return u.requests.Value().amounts() }

// SameUsage reports whether two versions of a pod weigh the same on the
// same node.
func (u *PodUsage) SameUsage(other *PodUsage) bool {
	return u.NodeName == other.NodeName && u.HoldsResources == other.HoldsResources && u.requests == other.requests
}

// GetObjectKind implements runtime.Object; a PodUsage has no kind of its
// own, being only ever cached, never sent.
func (u *PodUsage) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object.
func (u *PodUsage) DeepCopyObject() runtime.Object {
	out := *u // the request set and host ports are shared and immutable
	return &out
}

// ForeignPod is the informer transform of the pods that are not
// owner's, storing them as *PodUsage for capacity math. Every pod that runs
// on a node and is not the binding's own holds what it requests, pods of
// other bindings (of this virtual cluster or another) included: they run on
// what their binding was lent, which this binding must not lend again.
//
// Two kinds of pod are stored as holding nothing. The binding's own run on
// what it lent and must never reduce it (the wiring's label selector keeps
// them out already; a pod that carries owner's identity is never counted
// whatever the selector). A legacy pod (managed-by, but no binding UID:
// made before pods carried an identity) is counted as before, that is not
// at all: only its mapping tells whose it is, so it may be this binding's
// own, whose ports and requests counted as foreign would refuse it its own
// host ports and lend its node twice over. Its binding adopts it (stamps its
// identity) the first time it reconciles it, and from then on it counts
// for every other binding.
func ForeignPod(owner ownership.Owner) cache.TransformFunc {
	return func(obj any) (any, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return obj, nil
		}
		u := UsageOf(pod)
		if owner.Owns(pod) || ownership.Legacy(pod) {
			u.HoldsResources = false
		}
		return u, nil
	}
}

// HostPortsOf reads a *PodUsage for a hostports.Tracker: its key, node and
// host ports, none once it holds no resources (finished).
func HostPortsOf(obj any) (cache.ObjectName, string, []hostports.Port, bool) {
	u, ok := obj.(*PodUsage)
	if !ok {
		return cache.ObjectName{}, "", nil, false
	}
	key := cache.ObjectName{Namespace: u.Namespace, Name: u.Name}
	if !u.HoldsResources {
		return key, "", nil, true
	}
	return key, u.NodeName, u.HostPorts, true
}

// PodUsage implements metav1.Object so informers can key, index and hand it
// to typed event handlers. Only namespace, name and resourceVersion are
// kept; the rest is Unkept.
var _ metav1.Object = &PodUsage{}

func (u *PodUsage) GetNamespace() string              { return u.Namespace }
func (u *PodUsage) SetNamespace(namespace string)     { u.Namespace = namespace }
func (u *PodUsage) GetName() string                   { return u.Name }
func (u *PodUsage) SetName(name string)               { u.Name = name }
func (u *PodUsage) GetResourceVersion() string        { return u.ResourceVersion }
func (u *PodUsage) SetResourceVersion(version string) { u.ResourceVersion = version }
