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
	"fmt"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// BenchmarkNodeCache reports what one node costs in a node cache, decoded
// from protobuf as an informer receives it, stored as decoded (less
// managedFields) and through each of the syncer's node transforms:
// go test ./internal/compact -run - -bench NodeCache. virtual-own-allocatable
// is the virtual node without one map for allocatable and capacity.
func BenchmarkNodeCache(b *testing.B) {
	const nodes = 1000
	encoded := make([][]byte, nodes)
	for i := range encoded {
		data, err := realisticNode(fmt.Sprintf("worker-%04d", i)).Marshal()
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
	}
	transforms := []struct {
		name      string
		transform func(any) (any, error)
	}{
		{"as-decoded", func(obj any) (any, error) { return obj, nil }},
		{"physical", PhysicalNode},
		{"virtual", testTransforms.Owned},
		{"virtual-own-allocatable", func(obj any) (any, error) {
			obj, err := testTransforms.Owned(obj)
			node := obj.(*corev1.Node)
			node.Status.Allocatable = compactResources(node.Status.Allocatable)
			return node, err
		}},
	}
	for _, tt := range transforms {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportMetric(cachedBytes(b, encoded, 0, func(data []byte) (any, error) {
				node := &corev1.Node{}
				return node, node.Unmarshal(data)
			}, tt.transform), "B/cached-node")
		})
	}
}

// BenchmarkPodCache reports what one pod costs in a pod cache, decoded from
// protobuf as an informer receives it: stored as decoded (less
// managedFields); through Transforms.Pods (also with a garbage collection
// before every pod, as when pods come slower than collections run: strings
// must stay shared across collections); through VirtualPods beside a cache
// of the pods' physical twins (virtual-with-twin, the twins' own cost not
// counted); through Physical, and through Physical without its record
// (physical-as-slim-pod, a *corev1.Pod with the same slimmed spec):
// go test ./internal/compact -run - -bench PodCache
func BenchmarkPodCache(b *testing.B) {
	const pods = 1000
	encoded := make([][]byte, pods)
	twins := &TwinStatuses{Physical: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	for i := range encoded {
		pod := realisticPod(fmt.Sprintf("web-7d9c6b5f4-%05d", i))
		data, err := pod.Marshal()
		if err != nil {
			b.Fatal(err)
		}
		encoded[i] = data
		if err := twins.Physical.Add(physicalTwin(b, data)); err != nil {
			b.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name         string
		transform    func(any) (any, error)
		collectEvery int
	}{
		{"as-decoded", func(obj any) (any, error) { return obj, nil }, 0},
		{"shared-strings", testTransforms.Pods, 0},
		{"shared-strings-collecting", testTransforms.Pods, 1},
		{"virtual-with-twin", testTransforms.VirtualPods(twins), 0},
		{"physical", testTransforms.Physical, 0},
		{"physical-as-slim-pod", func(obj any) (any, error) { testTransforms.slimPhysical(obj.(*corev1.Pod)); return obj, nil }, 0},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportMetric(cachedBytes(b, encoded, tt.collectEvery, func(data []byte) (any, error) {
				pod := &corev1.Pod{}
				return pod, pod.Unmarshal(data)
			}, tt.transform), "B/cached-pod")
		})
	}
}

// physicalTwin is the physical pod cached for the virtual pod encoded in
// data, as the syncer's cache records it, once its status is copied.
func physicalTwin(b *testing.B, data []byte) any {
	virtual := &corev1.Pod{}
	if err := virtual.Unmarshal(data); err != nil {
		b.Fatal(err)
	}
	physical := &corev1.Pod{}
	if err := physical.Unmarshal(data); err != nil {
		b.Fatal(err)
	}
	physical.Namespace = virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace]
	physical.Name = virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
	physical.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationVirtualPodUID: string(virtual.UID)}
	record, err := testTransforms.Physical(physical)
	if err != nil {
		b.Fatal(err)
	}
	return record
}

// cachedBytes decodes each of encoded as an informer would, passes it
// through transform, stores it, and returns the heap the store holds per
// object. With collectEvery above 0 a garbage collection runs after every
// collectEvery objects, as collections run while a cache fills.
func cachedBytes(b *testing.B, encoded [][]byte, collectEvery int, decode func([]byte) (any, error), transform func(any) (any, error)) float64 {
	var perObject float64
	for b.Loop() {
		before := heapAlloc()
		store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		for i, data := range encoded {
			if collectEvery > 0 && i > 0 && i%collectEvery == 0 {
				runtime.GC()
			}
			obj, err := decode(data)
			if err != nil {
				b.Fatal(err)
			}
			if obj, err = transform(obj); err != nil {
				b.Fatal(err)
			}
			if err := store.Add(obj); err != nil {
				b.Fatal(err)
			}
		}
		perObject = float64(heapAlloc()-before) / float64(len(encoded))
		runtime.KeepAlive(store)
	}
	return perObject
}

// realisticNode is a node as a kubelet reports it, without images.
func realisticNode(name string) *corev1.Node {
	now := metav1.Now()
	resources := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	condition := func(t corev1.NodeConditionType, status corev1.ConditionStatus, reason, message string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: status, Reason: reason, Message: message, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: "6f1c2d3e-4b5a-4c6d-8e9f-0a1b2c3d4e5f", ResourceVersion: "123456", CreationTimestamp: now,
			Labels: map[string]string{
				"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
				"node.kubernetes.io/instance-type": "m5.2xlarge", "topology.kubernetes.io/zone": "zone-a",
				"topology.kubernetes.io/region": "region-1", "example.com/lendable": "true",
			},
			Annotations: map[string]string{
				"node.alpha.kubernetes.io/ttl":                           "0",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				"csi.volume.kubernetes.io/nodeid":                        `{"ebs.csi.aws.com":"i-0123456789abcdef0"}`,
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: "10.0.1.0/24", PodCIDRs: []string{"10.0.1.0/24"}, ProviderID: "aws:///zone-a/i-0123456789abcdef0"},
		Status: corev1.NodeStatus{
			Capacity: resources, Allocatable: resources,
			Conditions: []corev1.NodeCondition{
				condition(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				condition(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				condition(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				condition(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.1.17"}, {Type: corev1.NodeHostName, Address: name}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: "ec2a1b2c3d4e5f60718293a4b5c6d7e8", SystemUUID: "ec2a1b2c-3d4e-5f60-7182-93a4b5c6d7e8", BootID: "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
				KernelVersion: "6.1.0-18-cloud-amd64", OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.7.13",
				KubeletVersion: "v1.36.0", OperatingSystem: "linux", Architecture: "amd64",
			},
		},
	}
}

func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
