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

package preflight

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
)

// takenPorts has every host port taken on every node.
type takenPorts struct{}

func (takenPorts) Conflicts(_ string, want []hostports.Port) []hostports.Port { return want }
func (takenPorts) OnChange(func(string, bool))                                {}
func (takenPorts) HasSynced() bool                                            { return true }

// A pod refused for several reasons shows the first of the documented
// order; each check let through shows the next.
func TestGateOrder(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "agent", OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds", Controller: ptr.To(true)},
		}},
		Spec: corev1.PodSpec{RuntimeClassName: ptr.To("gvisor"), Containers: []corev1.Container{
			{Name: "c", Ports: []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: corev1.ProtocolTCP}}},
		}},
	}
	var reasons []string
	for _, sync := range []bool{false, true} {
		gate, err := New(Options{MountNamespace: "mount", SyncDaemonSetPods: sync, HostPorts: takenPorts{}})
		if err != nil {
			t.Fatal(err)
		}
		refusal := gate.Checks.First(context.Background(), &Pod{Virtual: pod, PhysicalNode: "node-1"})
		if refusal == nil {
			t.Fatalf("sync %v: not refused", sync)
		}
		reasons = append(reasons, refusal.Reason)
	}
	pod.Spec.RuntimeClassName = nil
	gate, _ := New(Options{MountNamespace: "mount", SyncDaemonSetPods: true, HostPorts: takenPorts{}})
	refusal := gate.Checks.First(context.Background(), &Pod{Virtual: pod, PhysicalNode: "node-1"})
	if refusal == nil || refusal.PortsOn != "node-1" || refusal.Again {
		t.Fatalf("host port refusal = %+v, want one waiting for ports on node-1", refusal)
	}
	reasons = append(reasons, refusal.Reason)
	want := []string{kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced, kubeoceanv1alpha1.ReasonRuntimeClassNotAllowed, kubeoceanv1alpha1.ReasonHostPortInUse}
	if !slices.Equal(reasons, want) {
		t.Errorf("reasons = %v, want %v", reasons, want)
	}
}

// A refused pod is held until it changes; one waiting for ports is let
// go, refusal forgotten, when they are freed on its node only.
func TestMemory(t *testing.T) {
	key := cache.ObjectName{Namespace: "team-a", Name: "web"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "u", Generation: 1, Labels: map[string]string{"app": "web"}}}
	m := NewMemory()
	m.Remember(key, pod)
	if !m.Holds(key, pod) {
		t.Fatal("a refused pod is not held")
	}
	changed := pod.DeepCopy()
	changed.Labels["app"] = "web2"
	if m.Holds(key, changed) {
		t.Error("a pod whose labels changed is held")
	}
	ours := pod.DeepCopy()
	ours.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationPhysicalPodName: "x"}
	if !m.Holds(key, ours) {
		t.Error("a pod that changed only by Kubeocean's annotations is let go")
	}
	m.WaitForPorts(key, "node-1")
	if keys := m.ReleasePorts("node-2"); len(keys) != 0 {
		t.Errorf("ports freed on another node released %v", keys)
	}
	if keys := m.ReleasePorts("node-1"); !slices.Equal(keys, []cache.ObjectName{key}) || m.Holds(key, pod) {
		t.Errorf("ports freed released %v, holds %v; want the pod, no longer held", keys, m.Holds(key, pod))
	}
}
