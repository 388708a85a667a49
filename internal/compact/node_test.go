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
	"strings"
	"testing"
	"unsafe"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// decodedNode builds a node whose strings share no memory with another
// call's, as two nodes decoded from the API would.
func decodedNode(name string) *corev1.Node {
	s := strings.Clone
	now := metav1.Now()
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42",
			Labels:      map[string]string{s("topology.kubernetes.io/zone"): s("zone-a"), s("kubernetes.io/hostname"): name},
			Annotations: map[string]string{s("node.alpha.kubernetes.io/ttl"): s("0")},
		},
		Spec: corev1.NodeSpec{
			PodCIDR: "10.0.0.0/24", ProviderID: "kwok://" + name, Unschedulable: true,
			Taints: []corev1.Taint{{Key: s("dedicated"), Value: s("batch"), Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8")},
			Allocatable: corev1.ResourceList{corev1.ResourceName(s("cpu")): resource.MustParse("7500m")},
			Conditions: append(make([]corev1.NodeCondition, 0, 8), corev1.NodeCondition{
				Type: corev1.NodeConditionType(s("Ready")), Status: corev1.ConditionStatus(s("True")),
				Reason: s("KubeletReady"), Message: s("kubelet is posting ready status"), LastHeartbeatTime: now, LastTransitionTime: now,
			}),
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.1.2.3"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: s("v1.36.0"), OSImage: s("Debian"), MachineID: "m-" + name, Architecture: s("amd64")},
			Images:          []corev1.ContainerImage{{Names: []string{"registry.example/app:1"}, SizeBytes: 1 << 20}},
			VolumesInUse:    []corev1.UniqueVolumeName{"kubernetes.io/csi/x"},
		},
	}
}

func sameMemory(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestPhysicalNodeKeepsWhatControllersRead(t *testing.T) {
	full := decodedNode("worker-a")
	obj, err := PhysicalNode(full.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.Node)

	want := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: full.Name, UID: full.UID, ResourceVersion: full.ResourceVersion, Labels: full.Labels},
		Spec:       corev1.NodeSpec{Taints: full.Spec.Taints, Unschedulable: true},
		Status: corev1.NodeStatus{
			Allocatable: full.Status.Allocatable, Conditions: full.Status.Conditions, Addresses: full.Status.Addresses,
			DaemonEndpoints: full.Status.DaemonEndpoints, NodeInfo: full.Status.NodeInfo,
		},
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("compacted node\n%+v\nwant\n%+v", got, want)
	}
	if cap(got.Status.Conditions) != len(got.Status.Conditions) {
		t.Fatalf("conditions hold capacity %d for %d", cap(got.Status.Conditions), len(got.Status.Conditions))
	}

	other, _ := PhysicalNode(decodedNode("worker-b"))
	b := other.(*corev1.Node)
	if !sameMemory(got.Labels["topology.kubernetes.io/zone"], b.Labels["topology.kubernetes.io/zone"]) ||
		!sameMemory(got.Status.Conditions[0].Message, b.Status.Conditions[0].Message) ||
		!sameMemory(got.Status.NodeInfo.KubeletVersion, b.Status.NodeInfo.KubeletVersion) ||
		!sameMemory(got.Spec.Taints[0].Key, b.Spec.Taints[0].Key) {
		t.Fatal("strings two nodes have in common are not shared")
	}

	tombstone := "not a node"
	if kept, _ := PhysicalNode(tombstone); kept != tombstone {
		t.Fatal("objects other than nodes must pass unchanged")
	}
}

func TestOwnedKeepsEveryField(t *testing.T) {
	node := decodedNode("vnode-c1-worker-a")
	obj, err := testTransforms.Owned(node.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.Node)
	if !equality.Semantic.DeepEqual(got, node) {
		t.Fatalf("testTransforms.Owned changed the virtual node:\n%+v\nwant\n%+v", got, node)
	}
	if sameMap(got.Status.Capacity, got.Status.Allocatable) {
		t.Fatal("allocatable differs from capacity here and must stay its own map")
	}
	other, _ := testTransforms.Owned(decodedNode("vnode-c1-worker-b"))
	b := other.(*corev1.Node)
	if !sameMemory(got.Annotations["node.alpha.kubernetes.io/ttl"], b.Annotations["node.alpha.kubernetes.io/ttl"]) ||
		!sameMemory(got.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason) {
		t.Fatal("strings two virtual nodes have in common are not shared")
	}

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "vnode-c1-worker-a",
		Labels: map[string]string{"kubeocean.io/cluster-id": strings.Clone("c1")}}}
	kept, err := testTransforms.Owned(lease.DeepCopy())
	if err != nil || !equality.Semantic.DeepEqual(kept, lease) {
		t.Fatalf("testTransforms.Owned changed a Lease: %+v, %v", kept, err)
	}
}

func TestOwnedSharesCapacityWithEqualAllocatable(t *testing.T) {
	node := decodedNode("vnode-c1-worker-a")
	node.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4000m"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	obj, _ := testTransforms.Owned(node.DeepCopy())
	got := obj.(*corev1.Node)
	if !equality.Semantic.DeepEqual(got, node) {
		t.Fatalf("testTransforms.Owned changed the virtual node:\n%+v\nwant\n%+v", got, node)
	}
	if !sameMap(got.Status.Capacity, got.Status.Allocatable) {
		t.Fatal("equal capacity and allocatable are held twice")
	}
	copied := got.DeepCopy()
	copied.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("1")
	if !copied.Status.Capacity.Cpu().Equal(resource.MustParse("4")) {
		t.Fatal("a DeepCopy of a cached node still shares capacity with allocatable")
	}
}
