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

package bottomup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestBindingsSharingANodeLendOnlyWhatTheOtherDoesNotUse: two bindings lend
// one physical node. A pod each binding's syncer runs there takes its
// requests off what the other binding lends, and its host port is held on
// the other binding's virtual node, while the binding's own pods take
// nothing off its own (they run on what it lent); once a pod goes, the
// other binding lends its share again.
func TestBindingsSharingANodeLendOnlyWhatTheOtherDoesNotUse(t *testing.T) {
	const node = "share-n"
	a := startSyncer(t, "share-a", "cls-share-a")
	b := startSyncer(t, "share-b", "cls-share-b")
	for _, w := range []*testenv.SyncerWorld{a, b} {
		allowHostPorts(t, w)
	}
	// B lends a node of its own first, which also shows its syncer runs
	// with the selector it started with; then it selects A's node too.
	b.LendNode(t, testenv.KwokNode("share-b-own", "4", "8Gi", map[string]string{"suite": "share-b"}))
	b.WaitCPU(t, "share-b-own", "4")
	selectAlso(t, b, "share-a")
	a.LendNode(t, testenv.KwokNode(node, "8", "16Gi", map[string]string{"suite": "share-a"}))
	a.WaitCPU(t, node, "8")
	b.WaitCPU(t, node, "8")

	ns := "share"
	testenv.CreateNamespace(t, a.Virtual, ns)
	testenv.WaitFor(t, 30*time.Second, "the default ServiceAccount in "+ns, func(ctx context.Context) (bool, error) {
		_, err := a.Virtual.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})

	// A's pod, run by A's syncer: B lends 3 CPU less and holds its port.
	runSharedPod(t, a, ns, "a-web", a.VirtualNode(node), "3", 8080)
	b.WaitCPU(t, node, "5")
	waitHeldPorts(t, b, b.VirtualNode(node), 8080)
	a.WaitCPU(t, node, "8")
	waitHeldPorts(t, a, a.VirtualNode(node))

	// B's pod: A lends 2 CPU less, B still lends what A leaves.
	runSharedPod(t, b, ns, "b-web", b.VirtualNode(node), "2", 9090)
	a.WaitCPU(t, node, "6")
	waitHeldPorts(t, a, a.VirtualNode(node), 9090)
	b.WaitCPU(t, node, "5")

	// A's pod goes: B lends its 3 CPU and port again.
	if err := a.Virtual.CoreV1().Pods(ns).Delete(t.Context(), "a-web", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, a, ns, "a-web")
	b.WaitCPU(t, node, "8")
	waitHeldPorts(t, b, b.VirtualNode(node))
	a.WaitCPU(t, node, "6")
}

// selectAlso makes w's binding select the nodes of suite too; the syncer
// exits on the new selector (as its Deployment would restart it) and is
// run again.
func selectAlso(t *testing.T, w *testenv.SyncerWorld, suite string) {
	t.Helper()
	w.UpdateBinding(t, func(binding *kubeoceanv1alpha1.ClusterBinding) {
		binding.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "suite", Operator: corev1.NodeSelectorOpIn, Values: []string{w.Binding, suite}}}}}}
	})
	if exit := w.WaitSyncerExit(t, 30*time.Second); exit == nil || !strings.Contains(exit.Error(), "restarting") {
		t.Fatalf("the syncer stopped with %v, want a restart for the new node selector", exit)
	}
	w.RunSyncer(t)
}

// allowHostPorts: host ports are beyond Pod Security "baseline"; the
// physical admin lets them into the mount namespace.
func allowHostPorts(t *testing.T, w *testenv.SyncerWorld) {
	t.Helper()
	mount, err := w.Physical.CoreV1().Namespaces().Get(t.Context(), w.Mount, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mount.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	if _, err := w.Physical.CoreV1().Namespaces().Update(t.Context(), mount, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runSharedPod creates a virtual pod on vnode requesting cpu and binding
// port, and waits until w's syncer runs it in the physical cluster.
func runSharedPod(t *testing.T, w *testenv.SyncerWorld, ns, name, vnode, cpu string, port int32) {
	t.Helper()
	p := virtualPodOn(ns, name, vnode)
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: port, HostPort: port}}
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, name+" runs in the physical cluster", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning && p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] != "",
			fmt.Errorf("phase %s, conditions %v", p.Status.Phase, p.Status.Conditions)
	})
}

// waitHeldPorts waits until the host port placeholders on vnode hold
// exactly want.
func waitHeldPorts(t *testing.T, w *testenv.SyncerWorld, vnode string, want ...int32) {
	t.Helper()
	testenv.WaitFor(t, 60*time.Second, fmt.Sprintf("the placeholders of %s hold %v", vnode, want), func(ctx context.Context) (bool, error) {
		list, err := w.Virtual.CoreV1().Pods(syncer.DefaultPlaceholderNamespace).List(ctx, metav1.ListOptions{LabelSelector: hostports.LabelPlaceholder + "=true"})
		if err != nil {
			return false, err
		}
		var ports []int32
		for _, p := range list.Items {
			if p.Spec.NodeName == vnode && p.DeletionTimestamp == nil {
				for _, port := range hostports.Of(&p) {
					ports = append(ports, port.Port)
				}
			}
		}
		slices.Sort(ports)
		return slices.Equal(ports, want), fmt.Errorf("ports %v", ports)
	})
}
