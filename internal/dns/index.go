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

package dns

import (
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Index holds the records of one binding's mirror Services by virtual
// namespace and name, kept up to date by the handlers of the Service and
// EndpointSlice informers, so that a query costs a map lookup. A change
// rebuilds the records of the one Service it touches.
type Index struct {
	bindingUID string
	domain     string // lower-case FQDN, "cluster.local."
	metrics    *Metrics

	mu sync.RWMutex
	// mirrors are the accepted mirror Services by their (physical) name.
	mirrors map[string]mirror
	// slices are the binding's EndpointSlices by the mirror name they
	// belong to, then by their own name; sliceOwner is the reverse.
	slices     map[string]map[string]*discoveryv1.EndpointSlice
	sliceOwner map[string]string
	services   map[virtualKey]*service
	namespaces map[string]int
	reverse    map[netip.Addr]map[virtualKey]string
	records    int

	synced atomic.Bool
}

type mirror struct {
	key virtualKey
	svc *corev1.Service
}

// NewIndex returns an empty index of the mirrors of bindingUID answering
// under domain (e.g. "cluster.local"). metrics may be nil.
func NewIndex(bindingUID, domain string, metrics *Metrics) *Index {
	return &Index{
		bindingUID: bindingUID,
		domain:     fqdn(domain),
		metrics:    metrics,
		mirrors:    map[string]mirror{},
		slices:     map[string]map[string]*discoveryv1.EndpointSlice{},
		sliceOwner: map[string]string{},
		services:   map[virtualKey]*service{},
		namespaces: map[string]int{},
		reverse:    map[netip.Addr]map[virtualKey]string{},
	}
}

// MarkSynced tells the index that the informers have listed everything:
// from then on it answers for the domain instead of SERVFAIL.
func (x *Index) MarkSynced() { x.synced.Store(true) }

// Synced reports whether MarkSynced was called.
func (x *Index) Synced() bool { return x.synced.Load() }

// ServiceHandler is the event handler of the mirror Service informer.
func (x *Index) ServiceHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { x.onService(obj, false) },
		UpdateFunc: func(_, obj any) { x.onService(obj, false) },
		DeleteFunc: func(obj any) { x.onService(obj, true) },
	}
}

// SliceHandler is the event handler of the EndpointSlice informer.
func (x *Index) SliceHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { x.onSlice(obj, false) },
		UpdateFunc: func(_, obj any) { x.onSlice(obj, false) },
		DeleteFunc: func(obj any) { x.onSlice(obj, true) },
	}
}

func (x *Index) onService(obj any, deleted bool) {
	svc, ok := controller.Unwrap[*corev1.Service](obj)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	old, had := x.mirrors[svc.Name]
	key, accepted := x.acceptService(svc)
	if had && (deleted || !accepted || old.key != key) {
		delete(x.mirrors, svc.Name)
		x.setRecord(old.key, nil)
	}
	if deleted || !accepted {
		return
	}
	x.mirrors[svc.Name] = mirror{key: key, svc: svc}
	x.rebuild(svc.Name)
}

// acceptService returns the virtual name a mirror answers for, and false
// for objects that are not this binding's mirrors. The name must be the
// physical name of the virtual one, so that no two mirrors can claim the
// same virtual name.
func (x *Index) acceptService(svc *corev1.Service) (virtualKey, bool) {
	if !x.ownedByBinding(svc.Labels) {
		return virtualKey{}, false
	}
	key := virtualKey{namespace: svc.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace], name: svc.Annotations[kubeoceanv1alpha1.AnnotationVirtualName]}
	if len(validation.IsDNS1123Label(key.namespace)) > 0 || len(validation.IsDNS1035Label(key.name)) > 0 {
		return virtualKey{}, false
	}
	return key, svc.Name == kubeoceanv1alpha1.PhysicalName(key.namespace, key.name)
}

func (x *Index) ownedByBinding(labels map[string]string) bool {
	return labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
		labels[kubeoceanv1alpha1.LabelBindingUID] == x.bindingUID
}

func (x *Index) onSlice(obj any, deleted bool) {
	slice, ok := controller.Unwrap[*discoveryv1.EndpointSlice](obj)
	if !ok {
		return
	}
	owner := slice.Labels[discoveryv1.LabelServiceName]
	accepted := !deleted && owner != "" && x.ownedByBinding(slice.Labels)
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, had := x.sliceOwner[slice.Name]; had && (!accepted || old != owner) {
		delete(x.slices[old], slice.Name)
		if len(x.slices[old]) == 0 {
			delete(x.slices, old)
		}
		delete(x.sliceOwner, slice.Name)
		x.rebuild(old)
	}
	if !accepted {
		return
	}
	if x.slices[owner] == nil {
		x.slices[owner] = map[string]*discoveryv1.EndpointSlice{}
	}
	x.slices[owner][slice.Name] = slice
	x.sliceOwner[slice.Name] = owner
	x.rebuild(owner)
}

// rebuild recomputes the records of the mirror named mirrorName, if it is
// one. Call with mu held.
func (x *Index) rebuild(mirrorName string) {
	m, ok := x.mirrors[mirrorName]
	if !ok {
		return
	}
	var epSlices []*discoveryv1.EndpointSlice
	for _, s := range x.slices[mirrorName] {
		epSlices = append(epSlices, s)
	}
	x.setRecord(m.key, buildService(m.key, m.svc, epSlices))
}

// setRecord replaces the records of key by s (nil removes them) with the
// reverse entries and counts that go with them. Call with mu held.
func (x *Index) setRecord(key virtualKey, s *service) {
	fqdn := key.name + "." + key.namespace + ".svc." + x.domain
	if old := x.services[key]; old != nil {
		for a := range old.reverseNames(fqdn) {
			delete(x.reverse[a], key)
			if len(x.reverse[a]) == 0 {
				delete(x.reverse, a)
			}
		}
		x.records -= old.recordCount()
		if x.namespaces[key.namespace]--; x.namespaces[key.namespace] == 0 {
			delete(x.namespaces, key.namespace)
		}
		delete(x.services, key)
	}
	if s != nil {
		s.prebuild(fqdn)
		x.services[key] = s
		x.namespaces[key.namespace]++
		x.records += s.recordCount()
		for a, name := range s.reverseNames(fqdn) {
			if x.reverse[a] == nil {
				x.reverse[a] = map[virtualKey]string{}
			}
			x.reverse[a][key] = name
		}
	}
	x.metrics.setRecords(len(x.services), x.records)
}

// service returns the records of a virtual Service, or nil.
func (x *Index) service(namespace, name string) *service {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.services[virtualKey{namespace: namespace, name: name}]
}

// hasNamespace reports whether a virtual namespace has a Service.
func (x *Index) hasNamespace(namespace string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.namespaces[namespace] > 0
}

// reverseNames returns the names that a PTR query of a answers, sorted.
func (x *Index) reverseNames(a netip.Addr) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var names []string
	for _, n := range x.reverse[a] {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
