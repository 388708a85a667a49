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

package topdown

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// placeholderPorts are the host ports the placeholders on the virtual node
// hold, nil when it has none.
func placeholderPorts(ctx context.Context, w *testenv.SyncerWorld, vnode string) ([]int32, error) {
	list, err := w.Virtual.CoreV1().Pods(syncer.DefaultPlaceholderNamespace).List(ctx, metav1.ListOptions{LabelSelector: hostports.LabelPlaceholder + "=true"})
	if err != nil {
		return nil, err
	}
	var ports []int32
	for _, p := range list.Items {
		if p.Spec.NodeName != vnode || p.DeletionTimestamp != nil {
			continue
		}
		for _, port := range hostports.Of(&p) {
			ports = append(ports, port.Port)
		}
	}
	slices.Sort(ports)
	return ports, nil
}

func waitPlaceholderPorts(t *testing.T, w *testenv.SyncerWorld, vnode string, want ...int32) {
	t.Helper()
	testenv.WaitFor(t, 60*time.Second, fmt.Sprintf("the placeholder of %s holds %v", vnode, want), func(ctx context.Context) (bool, error) {
		ports, err := placeholderPorts(ctx, w, vnode)
		return slices.Equal(ports, want), fmt.Errorf("ports %v (err %v)", ports, err)
	})
}

// foreignHostPortPod is a pod Kubeocean does not run, binding port on node.
func foreignHostPortPod(name, node string, port int32) *corev1.Pod {
	p := testenv.KwokPod("hp-foreign", name, node, "100m", "64Mi", nil)
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port}}
	return p
}

// TestHostPortsOfForeignPodsSteerTheVirtualScheduler: a host port bound on
// a physical node by a pod Kubeocean does not run is taken on its virtual
// node too, so the virtual scheduler puts a pod asking for it on the other
// node (it prefers the taken one); the placeholder holding it follows the
// foreign pods as they come and go; and a pod bound by hand to a node whose
// port is taken is not created in the physical cluster until the port is
// freed.
func TestHostPortsOfForeignPodsSteerTheVirtualScheduler(t *testing.T) {
	ctx := t.Context()
	w := testenv.StartSyncer(t, virtualCluster, physicalCluster, "hp", "cls-hp",
		syncer.Options{Workers: 2, PodWorkers: 4, PhysicalQPS: 200, PhysicalBurst: 400})
	// Host ports are beyond Pod Security "baseline": the physical admin
	// lets them in.
	mount, err := w.Physical.CoreV1().Namespaces().Get(ctx, w.Mount, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mount.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	if _, err := w.Physical.CoreV1().Namespaces().Update(ctx, mount, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"hp-b"} {
		if _, err := w.Physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(name, "8", "32Gi", map[string]string{"suite": "hp"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.LendNode(t, testenv.KwokNode("hp-a", "8", "32Gi", map[string]string{"suite": "hp"}))
	w.WaitCPU(t, "hp-a", "8")
	w.WaitCPU(t, "hp-b", "8")
	vnodeA, vnodeB := w.VirtualNode("hp-a"), w.VirtualNode("hp-b")

	testenv.CreateNamespace(t, w.Physical, "hp-foreign")
	if _, err := w.Physical.CoreV1().Pods("hp-foreign").Create(ctx, foreignHostPortPod("web-a", "hp-a", 8080), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaceholderPorts(t, w, vnodeA, 8080)

	ns := "hp"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	web := workload(ns, "web", "cls-hp", func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080}}
		// Without the placeholder the scheduler would take node a.
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100, Preference: corev1.NodeSelectorTerm{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{vnodeA}}},
			}}},
		}}
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "web runs on node b", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Spec.NodeName == vnodeB && p.Status.Phase == corev1.PodRunning, fmt.Errorf("on %q, %s", p.Spec.NodeName, p.Status.Phase)
	})

	// The placeholder follows the foreign pods; the pods Kubeocean runs
	// (web on b) are the virtual scheduler's own and are not in it.
	if err := w.Physical.CoreV1().Pods("hp-foreign").Delete(ctx, "web-a", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitPlaceholderPorts(t, w, vnodeA)
	if _, err := w.Physical.CoreV1().Pods("hp-foreign").Create(ctx, foreignHostPortPod("web-b", "hp-b", 9090), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPlaceholderPorts(t, w, vnodeB, 9090)

	// Bound by hand, past the scheduler, to a node whose port is taken: not
	// created, and says why, until the port is free.
	pinned := workload(ns, "pinned", "cls-hp", func(p *corev1.Pod) {
		p.Spec.NodeName = vnodeB
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 9090, HostPort: 9090}}
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, c := waitCreatedCondition(t, w, ns, "pinned", corev1.ConditionFalse, kubeoceanv1alpha1.ReasonHostPortInUse)
	t.Logf("condition: %s", c.Message)
	time.Sleep(3 * time.Second)
	if physicalPodExists(t, w, ns, "pinned") {
		t.Fatal("the pod whose host port is taken exists in the physical cluster")
	}
	if err := w.Physical.CoreV1().Pods("hp-foreign").Delete(ctx, "web-b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitCreatedCondition(t, w, ns, "pinned", corev1.ConditionTrue, kubeoceanv1alpha1.ReasonPhysicalPodCreated)
	if !physicalPodExists(t, w, ns, "pinned") {
		t.Fatal("the pod is not in the physical cluster once its port is free")
	}
	waitPlaceholderPorts(t, w, vnodeB)
	if n := eventsFor(t, w, ns, "pinned", kubeoceanv1alpha1.ReasonHostPortInUse); n != 1 {
		t.Errorf("%d %s events, want 1", n, kubeoceanv1alpha1.ReasonHostPortInUse)
	}
}
