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

package node

import (
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// desiredNode is what Kubeocean wants a virtual node to have; fields it
// does not list (other labels, annotations, taints, conditions) belong to
// users and to the virtual cluster's own controllers.
type desiredNode struct {
	name        string
	labels      map[string]string
	annotations map[string]string
	taints      []corev1.Taint
	// unschedulable mirrors the physical node's cordon.
	unschedulable bool
	status        corev1.NodeStatus
}

// nodeInputs is everything a virtual node is computed from.
type nodeInputs struct {
	binding     *kubeoceanv1alpha1.ClusterBinding
	clusterID   string
	physical    *corev1.Node
	policy      *kubeoceanv1alpha1.ResourceLeasingPolicy
	policies    []*kubeoceanv1alpha1.ResourceLeasingPolicy // all of them, for the configuration's token
	capacity    corev1.ResourceList
	windowTaint *corev1.Taint // nil inside a time window
	// kubelet is the endpoint the syncer serves the node's kubelet API
	// at; nil copies the physical node's (the kubelet API is off).
	kubelet *kubeletEndpoint
}

// kubeletEndpoint is where the virtual apiserver reaches a virtual node's
// kubelet API.
type kubeletEndpoint struct {
	address string
	port    int
}

// KubeletEndpointFunc returns the kubelet endpoint of the virtual node
// name; current is the node as it is (nil before it is created).
type KubeletEndpointFunc func(name string, current *corev1.Node) (address string, port int, err error)

// addresses advertises the endpoint under the one address type that the
// apiserver can dial: a Hostname address would be tried first with the
// apiserver's default preference and the virtual node's name resolves
// nowhere.
func (e *kubeletEndpoint) addresses() []corev1.NodeAddress {
	addressType := corev1.NodeInternalIP
	if net.ParseIP(e.address) == nil {
		addressType = corev1.NodeInternalDNS
	}
	return []corev1.NodeAddress{{Type: addressType, Address: e.address}}
}

// physicalOnlyLabels describe the physical machine itself and would be
// wrong on the virtual node.
var physicalOnlyLabels = map[string]bool{
	corev1.LabelHostname: true,
}

// clusterManagedTaintPrefix marks taints each cluster's own node controllers
// manage (not-ready, unreachable, unschedulable, ...). Copying them would
// make the two clusters' controllers fight over one taint.
const clusterManagedTaintPrefix = "node.kubernetes.io/"

func buildDesired(name string, in nodeInputs) desiredNode {
	labels := map[string]string{}
	for k, v := range in.physical.Labels {
		if !physicalOnlyLabels[k] {
			labels[k] = v
		}
	}
	labels[corev1.LabelHostname] = name
	labels[kubeoceanv1alpha1.LabelManagedBy] = kubeoceanv1alpha1.ManagedByKubeocean
	labels[kubeoceanv1alpha1.LabelClusterID] = in.clusterID
	labels[kubeoceanv1alpha1.LabelClusterBinding] = in.binding.Name
	annotations := map[string]string{
		kubeoceanv1alpha1.AnnotationResourceLeasingPolicy: in.policy.Name,
	}
	kubeoceanv1alpha1.SetPhysicalNodeName(labels, annotations, in.physical.Name)

	var taints []corev1.Taint
	for _, t := range in.physical.Spec.Taints {
		if !strings.HasPrefix(t.Key, clusterManagedTaintPrefix) {
			taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	if !in.binding.Spec.DisableNodeDefaultTaint {
		taints = append(taints, corev1.Taint{Key: kubeoceanv1alpha1.TaintVirtualNode, Effect: corev1.TaintEffectNoSchedule})
	}
	if in.windowTaint != nil {
		taints = append(taints, *in.windowTaint)
	}

	addresses, endpoints := in.physical.Status.Addresses, in.physical.Status.DaemonEndpoints
	if in.kubelet != nil {
		annotations[kubeoceanv1alpha1.AnnotationKubeletPort] = strconv.Itoa(in.kubelet.port)
		addresses = in.kubelet.addresses()
		endpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(in.kubelet.port)}}
	}
	return desiredNode{
		name:          name,
		labels:        labels,
		annotations:   annotations,
		taints:        taints,
		unschedulable: in.physical.Spec.Unschedulable,
		status: corev1.NodeStatus{
			Capacity:        in.capacity,
			Allocatable:     in.capacity,
			Conditions:      in.physical.Status.Conditions,
			Addresses:       addresses,
			DaemonEndpoints: endpoints,
			NodeInfo:        in.physical.Status.NodeInfo,
		},
	}
}

// desiredStatus merges the desired status into the virtual node's current
// one. Conditions whose status, reason and message are unchanged keep the
// virtual node's timestamps, so physical heartbeats alone cause no writes:
// liveness travels through the node Lease instead.
func desiredStatus(current corev1.NodeStatus, want corev1.NodeStatus) corev1.NodeStatus {
	merged := current.DeepCopy()
	merged.Capacity = want.Capacity
	merged.Allocatable = want.Allocatable
	merged.Addresses = want.Addresses
	merged.DaemonEndpoints = want.DaemonEndpoints
	merged.NodeInfo = want.NodeInfo

	conditions := make([]corev1.NodeCondition, 0, len(want.Conditions))
	for _, w := range want.Conditions {
		c := w
		for _, old := range current.Conditions {
			switch {
			case old.Type != w.Type:
			case old.Status == w.Status && old.Reason == w.Reason && old.Message == w.Message:
				c.LastHeartbeatTime, c.LastTransitionTime = old.LastHeartbeatTime, old.LastTransitionTime
			case w.Type == corev1.NodeReady && w.Status != corev1.ConditionTrue && old.Status != corev1.ConditionTrue:
				// Not ready on both sides: the virtual cluster's node
				// lifecycle controller has its say (Unknown once the Lease
				// stops); rewriting it would only start a tug of war.
				c = old
			}
		}
		conditions = append(conditions, c)
	}
	merged.Conditions = conditions
	return *merged
}

// keepCondition returns conditions with the condition of type typ as it is
// in current (left out when current has none).
func keepCondition(conditions, current []corev1.NodeCondition, typ corev1.NodeConditionType) []corev1.NodeCondition {
	out := make([]corev1.NodeCondition, 0, len(conditions))
	for _, c := range conditions {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	for _, c := range current {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}
