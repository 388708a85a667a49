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
	"sync"
)

// PortAllocator hands out the kubelet ports of virtual nodes from a range.
// The virtual apiserver tells nodes apart only by address and port, so one
// allocator serves a whole process: the manager's in-process syncers share
// it, and two nodes of different bindings never get the same port.
type PortAllocator struct {
	min, max int

	mu     sync.Mutex
	byPort map[int]string
	byNode map[string]int
}

// NewPortAllocator returns an allocator of the ports min..max (inclusive).
func NewPortAllocator(min, max int) (*PortAllocator, error) {
	if min <= 0 || max > 65535 || min > max {
		return nil, fmt.Errorf("kubelet port range %d-%d is not a range of TCP ports", min, max)
	}
	return &PortAllocator{min: min, max: max, byPort: map[int]string{}, byNode: map[string]int{}}, nil
}

// Range returns the first and last port of the allocator.
func (a *PortAllocator) Range() (int, int) { return a.min, a.max }

// Assign returns node's port. A node keeps the port it holds; otherwise it
// gets recorded (the port it had before a restart) when that port is in
// range and free, else the lowest free port.
func (a *PortAllocator) Assign(node string, recorded int) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if port, ok := a.byNode[node]; ok {
		return port, nil
	}
	if recorded >= a.min && recorded <= a.max {
		if _, taken := a.byPort[recorded]; !taken {
			a.take(node, recorded)
			return recorded, nil
		}
	}
	for port := a.min; port <= a.max; port++ {
		if _, taken := a.byPort[port]; !taken {
			a.take(node, port)
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free kubelet port in %d-%d for node %s: widen the range", a.min, a.max, node)
}

// Reserve gives node its recorded port if it is in range and free, so that
// nodes that existed before a restart get their ports back before new nodes
// are given any. It reports whether node holds recorded afterwards.
func (a *PortAllocator) Reserve(node string, recorded int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if port, ok := a.byNode[node]; ok {
		return port == recorded
	}
	if recorded < a.min || recorded > a.max {
		return false
	}
	if _, taken := a.byPort[recorded]; taken {
		return false
	}
	a.take(node, recorded)
	return true
}

// Release frees node's port.
func (a *PortAllocator) Release(node string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if port, ok := a.byNode[node]; ok {
		delete(a.byNode, node)
		delete(a.byPort, port)
	}
}

// Port returns node's port, or 0.
func (a *PortAllocator) Port(node string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.byNode[node]
}

func (a *PortAllocator) take(node string, port int) {
	a.byNode[node] = port
	a.byPort[port] = node
}
