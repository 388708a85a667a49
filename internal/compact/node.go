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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The informer transforms of the node caches. A syncer caches every lent
// node twice (the physical node and its virtual twin) with its Lease, and
// what one node says is mostly what the next one says: the same label keys
// and values, condition reasons and messages, OS and runtime versions. As
// decoded, each node holds a private copy of all of it. The transforms
// share those strings (intern.go), size maps and slices to fit, and
// keep of physical nodes only what the controllers read.

// PhysicalNode keeps of a physical node what the node controller
// (selection, labels, taints, cordon, status it copies, allocatable) and
// the lease controller (readiness) read. Annotations, the image list,
// volume bookkeeping, capacity and the rest are dropped.
func PhysicalNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:              node.Name,
			UID:               node.UID,
			ResourceVersion:   node.ResourceVersion,
			CreationTimestamp: node.CreationTimestamp,
			DeletionTimestamp: node.DeletionTimestamp,
			Labels:            InternMap(node.Labels),
		},
		Spec: corev1.NodeSpec{
			Taints:        compactTaints(node.Spec.Taints),
			Unschedulable: node.Spec.Unschedulable,
		},
		Status: corev1.NodeStatus{
			Allocatable:     compactResources(node.Status.Allocatable),
			Conditions:      compactConditions(node.Status.Conditions),
			Addresses:       append([]corev1.NodeAddress(nil), node.Status.Addresses...),
			DaemonEndpoints: node.Status.DaemonEndpoints,
			NodeInfo:        compactNodeInfo(node.Status.NodeInfo),
		},
	}, nil
}

// Owned shares the repeating strings of the virtual objects a
// syncer owns, keeping every field: the controllers write these objects
// back from what they read.
func (t Transforms) Owned(obj any) (any, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetLabels(InternMap(accessor.GetLabels()))
		accessor.SetAnnotations(t.compactAnnotations(accessor.GetAnnotations()))
	}
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.Spec.Taints = compactTaints(node.Spec.Taints)
	status := &node.Status
	status.Capacity = compactResources(status.Capacity)
	if sameResources(status.Allocatable, status.Capacity) {
		// A virtual node lends all its capacity: one map serves both. Cached
		// objects are read-only, and a DeepCopy separates them again.
		status.Allocatable = status.Capacity
	} else {
		status.Allocatable = compactResources(status.Allocatable)
	}
	status.Conditions = compactConditions(status.Conditions)
	status.NodeInfo = compactNodeInfo(status.NodeInfo)
	return node, nil
}

// compactResources copies list into a map sized to fit, with shared
// resource names.
func compactResources(list corev1.ResourceList) corev1.ResourceList {
	if list == nil {
		return nil
	}
	out := make(corev1.ResourceList, len(list))
	for name, q := range list {
		out[corev1.ResourceName(Intern(string(name)))] = q
	}
	return out
}

// sameResources reports whether a and b list the same quantities; it runs
// on every virtual node event, so it compares without reflection.
func sameResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

// compactConditions copies conditions into a slice sized to fit (decoding
// grows it by doubling), with shared type, status, reason and message.
func compactConditions(conditions []corev1.NodeCondition) []corev1.NodeCondition {
	if conditions == nil {
		return nil
	}
	out := make([]corev1.NodeCondition, len(conditions))
	for i, c := range conditions {
		c.Type = corev1.NodeConditionType(Intern(string(c.Type)))
		c.Status = corev1.ConditionStatus(Intern(string(c.Status)))
		c.Reason = Intern(c.Reason)
		c.Message = Intern(c.Message)
		out[i] = c
	}
	return out
}

func compactTaints(taints []corev1.Taint) []corev1.Taint {
	if taints == nil {
		return nil
	}
	out := make([]corev1.Taint, len(taints))
	for i, t := range taints {
		t.Key, t.Value = Intern(t.Key), Intern(t.Value)
		t.Effect = corev1.TaintEffect(Intern(string(t.Effect)))
		out[i] = t
	}
	return out
}

// compactNodeInfo shares what nodes of one pool have in common; the
// machine, system and boot IDs are each node's own and stay as they are.
func compactNodeInfo(info corev1.NodeSystemInfo) corev1.NodeSystemInfo {
	info.KernelVersion = Intern(info.KernelVersion)
	info.OSImage = Intern(info.OSImage)
	info.ContainerRuntimeVersion = Intern(info.ContainerRuntimeVersion)
	info.KubeletVersion = Intern(info.KubeletVersion)
	info.KubeProxyVersion = Intern(info.KubeProxyVersion) //nolint:staticcheck // still reported by older kubelets
	info.OperatingSystem = Intern(info.OperatingSystem)
	info.Architecture = Intern(info.Architecture)
	return info
}
