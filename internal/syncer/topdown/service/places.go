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
	"fmt"
	"maps"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
)

// Places tells, for the node an endpoint's pod runs on, whether the
// binding's pods reach it: on the binding's own virtual nodes (the mirror
// holds it through the physical pod), on a node whose pod network the
// binding declares joined (ClusterBinding spec.network: the mirror holds
// its IP as it is), or elsewhere (left out, and counted for the
// EndpointsInOtherClusters event).
type Places struct {
	// Binding is this binding's name.
	Binding string
	// Joined are the bindings named in spec.network.joinedWith.
	Joined []string
	// VirtualNodes: spec.network.includeVirtualNodes.
	VirtualNodes bool
	// BindingOfNode names the binding whose virtual node nodeName is; ok
	// is false for a node that is none of Kubeocean's (the virtual
	// cluster's own) or is unknown.
	BindingOfNode func(nodeName string) (binding string, ok bool)
}

// placement is where a pod endpoint runs, seen from the binding.
type placement struct {
	here, joined bool
	// where names the place in the event's message.
	where string
}

const (
	whereVirtualNodes = "the virtual cluster's own nodes"
	whereUnknown      = "no known node"
)

func (p *Places) of(nodeName *string) placement {
	if nodeName == nil || *nodeName == "" {
		// A hand-written endpoint naming a pod but no node: nothing
		// says which network it is in.
		return placement{where: whereUnknown}
	}
	binding, ok := "", false
	if p.BindingOfNode != nil {
		binding, ok = p.BindingOfNode(*nodeName)
	}
	switch {
	case ok && binding == p.Binding:
		return placement{here: true}
	case ok:
		return placement{joined: slices.Contains(p.Joined, binding), where: "binding " + binding}
	default:
		return placement{joined: p.VirtualNodes, where: whereVirtualNodes}
	}
}

// ready is the EndpointSlice API's reading of a missing condition.
func ready(e discoveryv1.Endpoint) bool {
	return e.Conditions.Ready == nil || *e.Conditions.Ready
}

// elsewhere counts the ready endpoints the mirror leaves out, by place.
type elsewhere map[string]int

func (e elsewhere) add(where string) { e[where]++ }

// message is the EndpointsInOtherClusters event's text; it is also the
// fingerprint that tells whether the event was already recorded, so it
// holds nothing that changes without the set changing (not the total of
// endpoints, which the binding's own pods change).
func (e elsewhere) message(binding string) string {
	total := 0
	parts := make([]string, 0, len(e))
	for _, where := range slices.Sorted(maps.Keys(e)) {
		total += e[where]
		parts = append(parts, fmt.Sprintf("%d on %s", e[where], where))
	}
	return fmt.Sprintf("%d ready endpoint(s) run where the pods of binding %s cannot reach them, and its mirror of the Service leaves them out: %s. "+
		"If those pod networks are routable from the binding's, declare them in spec.network of ClusterBinding %s (docs/networking.md)",
		total, binding, strings.Join(parts, ", "), binding)
}
