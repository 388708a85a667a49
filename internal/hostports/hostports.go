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

// Package hostports knows which host ports the pods a binding does not run
// (the physical cluster's own, and other bindings') hold on each physical
// node, read as the scheduler reads them, so that the virtual scheduler can
// be kept off them (a placeholder pod per virtual node carries them, see
// package portholder) and a pod placed on a port that was taken meanwhile
// is not sent to the physical cluster.
package hostports

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// LabelPlaceholder marks the virtual pods that only hold the host ports of
// a physical node for the virtual scheduler. They are never run: the
// top-down side skips them.
const LabelPlaceholder = kubeoceanv1alpha1.GroupName + "/host-ports-placeholder"

// bindAll is the host IP of a port bound on every address, as the
// scheduler writes an empty host IP.
const bindAll = "0.0.0.0"

// Port is one host port: an address (bindAll for all), a protocol and a
// number.
type Port struct {
	IP       string
	Protocol corev1.Protocol
	Port     int32
}

func (p Port) String() string {
	return fmt.Sprintf("%s/%s:%d", p.Protocol, p.IP, p.Port)
}

// Conflicts tells two ports that cannot both be bound on one node: the same
// protocol and number, on the same address or one of them on all.
func (p Port) Conflicts(q Port) bool {
	return p.Protocol == q.Protocol && p.Port == q.Port && (p.IP == q.IP || p.IP == bindAll || q.IP == bindAll)
}

func compare(a, b Port) int {
	return cmp.Or(cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.IP, b.IP))
}

// Of are the host ports pod binds, as the scheduler's NodePorts plugin
// counts them: those of its containers and of its sidecars (init
// containers that keep running), with an empty address read as all and an
// empty protocol as TCP; sorted, each once. A hostNetwork pod's ports are
// its host ports (the API server defaults hostPort to containerPort).
func Of(pod *corev1.Pod) []Port {
	var ports []Port
	add := func(c *corev1.Container) {
		for _, p := range c.Ports {
			if p.HostPort <= 0 {
				continue
			}
			port := Port{IP: p.HostIP, Protocol: p.Protocol, Port: p.HostPort}
			if port.IP == "" {
				port.IP = bindAll
			}
			if port.Protocol == "" {
				port.Protocol = corev1.ProtocolTCP
			}
			ports = append(ports, port)
		}
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i])
	}
	return normalize(ports)
}

func normalize(ports []Port) []Port {
	if len(ports) == 0 {
		return nil
	}
	slices.SortFunc(ports, compare)
	return slices.Compact(ports)
}

// Conflicting are the ports of want that one of used conflicts with.
func Conflicting(used, want []Port) []Port {
	var out []Port
	for _, w := range want {
		if slices.ContainsFunc(used, w.Conflicts) {
			out = append(out, w)
		}
	}
	return out
}

// Tracker holds the host ports of a cache of pods by node. Fed every
// change of the cache (Handler), it answers for a node without walking its
// pods, and keeps only the pods that bind host ports, which are few. It is
// safe for concurrent use.
type Tracker struct {
	mu    sync.Mutex
	pods  map[cache.ObjectName]entry
	nodes map[string]map[cache.ObjectName][]Port
	// listeners are told, after each change, which node changed and
	// whether a port was freed on it.
	listeners []func(node string, freed bool)
	synced    cache.InformerSynced
}

type entry struct {
	node  string
	ports []Port
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{pods: map[cache.ObjectName]entry{}, nodes: map[string]map[cache.ObjectName][]Port{}}
}

// OnChange registers fn, called after the ports of a node changed with
// freed set when a port was released there. Register before the informer
// feeding the tracker starts; fn must not block.
func (t *Tracker) OnChange(fn func(node string, freed bool)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.listeners = append(t.listeners, fn)
}

// Set records that the pod key binds ports on node; no node or no ports
// forget it.
func (t *Tracker) Set(key cache.ObjectName, node string, ports []Port) {
	t.mu.Lock()
	old := t.pods[key]
	if node == "" {
		ports = nil
	}
	if old.node == node && slices.Equal(old.ports, ports) {
		t.mu.Unlock()
		return
	}
	if old.node != "" {
		delete(t.nodes[old.node], key)
		if len(t.nodes[old.node]) == 0 {
			delete(t.nodes, old.node)
		}
	}
	if len(ports) == 0 {
		delete(t.pods, key)
	} else {
		t.pods[key] = entry{node: node, ports: ports}
		if t.nodes[node] == nil {
			t.nodes[node] = map[cache.ObjectName][]Port{}
		}
		t.nodes[node][key] = ports
	}
	listeners := slices.Clone(t.listeners)
	t.mu.Unlock()

	type change struct {
		node  string
		freed bool
	}
	var changes []change
	switch {
	case old.node == node:
		freed := slices.ContainsFunc(old.ports, func(p Port) bool { return !slices.Contains(ports, p) })
		changes = append(changes, change{node, freed})
	default:
		if old.node != "" {
			changes = append(changes, change{old.node, true})
		}
		if node != "" && len(ports) > 0 {
			changes = append(changes, change{node, false})
		}
	}
	for _, c := range changes {
		for _, fn := range listeners {
			fn(c.node, c.freed)
		}
	}
}

// Used are the host ports bound on node, sorted, each once.
func (t *Tracker) Used(node string) []Port {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ports []Port
	for _, p := range t.nodes[node] {
		ports = append(ports, p...)
	}
	return normalize(ports)
}

// Conflicts are the ports of want taken on node.
func (t *Tracker) Conflicts(node string, want []Port) []Port {
	if len(want) == 0 {
		return nil
	}
	return Conflicting(t.Used(node), want)
}

// HasSynced tells whether the tracker has seen the whole initial list of
// the informer it is fed from (false before Feed).
func (t *Tracker) HasSynced() bool {
	t.mu.Lock()
	synced := t.synced
	t.mu.Unlock()
	return synced != nil && synced()
}

// Feed registers the tracker on informer, whose objects read reads: the
// pod's key, node and host ports (ok false for an object of another type).
func (t *Tracker) Feed(informer cache.SharedIndexInformer, read func(obj any) (key cache.ObjectName, node string, ports []Port, ok bool)) error {
	registration, err := informer.AddEventHandler(feeder{t: t, read: read})
	if err != nil {
		return fmt.Errorf("hostports: registering the tracker: %w", err)
	}
	t.mu.Lock()
	t.synced = registration.HasSynced
	t.mu.Unlock()
	return nil
}

type feeder struct {
	t    *Tracker
	read func(obj any) (cache.ObjectName, string, []Port, bool)
}

func (f feeder) OnAdd(obj any, _ bool) {
	if key, node, ports, ok := f.read(obj); ok {
		f.t.Set(key, node, ports)
	}
}

func (f feeder) OnUpdate(_, newObj any) { f.OnAdd(newObj, false) }

func (f feeder) OnDelete(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if key, err := cache.ParseObjectName(tombstone.Key); err == nil {
			f.t.Set(key, "", nil)
		}
		return
	}
	if key, _, _, ok := f.read(obj); ok {
		f.t.Set(key, "", nil)
	}
}

// IsPlaceholder tells a virtual pod that only holds host ports (of any
// binding): it is never run in a physical cluster.
func IsPlaceholder(pod *corev1.Pod) bool {
	return pod.Labels[LabelPlaceholder] == "true" &&
		pod.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean
}
