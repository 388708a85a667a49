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

package portholder

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
)

const (
	clusterID = "cls"
	namespace = "kubeocean-system"
)

type fixture struct {
	c       *Controller
	client  *kubefake.Clientset
	nodes   cache.Indexer
	holders cache.Indexer
	tracker *hostports.Tracker
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client := kubefake.NewClientset()
	factory := kubeinformers.NewSharedInformerFactory(client, 0)
	tracker := hostports.NewTracker()
	c, err := New(Options{
		ClusterID: clusterID, BindingUID: "uid-1", Namespace: namespace,
		VirtualClient: client.CoreV1(), VirtualNodes: factory.Core().V1().Nodes(),
		Placeholders: factory.Core().V1().Pods(), Tracker: tracker,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{c: c, client: client, nodes: factory.Core().V1().Nodes().Informer().GetIndexer(),
		holders: factory.Core().V1().Pods().Informer().GetIndexer(), tracker: tracker}
}

func virtualNode(physical string, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: kubeoceanv1alpha1.VirtualNodeName(clusterID, physical), UID: "node-uid",
		Labels: map[string]string{
			kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean,
			kubeoceanv1alpha1.LabelClusterID: clusterID,
		},
		Annotations: map[string]string{},
	}, Spec: corev1.NodeSpec{Taints: taints}}
	kubeoceanv1alpha1.SetPhysicalNodeName(n.Labels, n.Annotations, physical)
	return n
}

func port(n int32) hostports.Port {
	return hostports.Port{IP: "0.0.0.0", Protocol: corev1.ProtocolTCP, Port: n}
}

func (f *fixture) reconcile(t *testing.T, node string) []string {
	t.Helper()
	f.client.ClearActions()
	if _, err := f.c.reconcile(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range f.client.Actions() {
		verb := a.GetVerb()
		switch a := a.(type) {
		case clienttesting.CreateAction:
			verb += " " + a.GetObject().(metav1.Object).GetName()
		case clienttesting.DeleteAction:
			verb += " " + a.GetName()
		}
		verbs = append(verbs, verb)
	}
	return verbs
}

// sync puts what the client holds into the placeholder cache, as the
// informer would.
func (f *fixture) sync(t *testing.T) {
	t.Helper()
	list, err := f.client.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range f.holders.List() {
		_ = f.holders.Delete(obj)
	}
	for i := range list.Items {
		_ = f.holders.Add(&list.Items[i])
	}
}

func TestReconcileFollowsPorts(t *testing.T) {
	f := newFixture(t)
	node := virtualNode("worker")
	_ = f.nodes.Add(node)

	if got := f.reconcile(t, node.Name); len(got) != 0 {
		t.Fatalf("no ports: actions %v", got)
	}

	f.tracker.Set(cache.ObjectName{Namespace: "x", Name: "web"}, "worker", []hostports.Port{port(80)})
	first := placeholderName(node.Name, []hostports.Port{port(80)})
	if got := f.reconcile(t, node.Name); !slices.Equal(got, []string{"create " + first}) {
		t.Fatalf("port 80: actions %v", got)
	}
	f.sync(t)
	created, err := f.client.CoreV1().Pods(namespace).Get(t.Context(), first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !hostports.IsPlaceholder(created) || created.Labels[kubeoceanv1alpha1.LabelBindingUID] != "uid-1" ||
		created.Spec.NodeName != node.Name || len(created.OwnerReferences) != 1 || created.OwnerReferences[0].UID != node.UID {
		t.Errorf("placeholder %+v", created.ObjectMeta)
	}
	if got := hostports.Of(created); !slices.Equal(got, []hostports.Port{port(80)}) {
		t.Errorf("placeholder holds %v", got)
	}
	if len(created.Spec.Containers[0].Resources.Requests) != 0 {
		t.Errorf("placeholder requests %v", created.Spec.Containers[0].Resources.Requests)
	}
	if got := f.reconcile(t, node.Name); len(got) != 0 {
		t.Fatalf("again: actions %v, want none", got)
	}

	// New ports: the new placeholder first, then the old one goes.
	f.tracker.Set(cache.ObjectName{Namespace: "x", Name: "db"}, "worker", []hostports.Port{port(90)})
	second := placeholderName(node.Name, []hostports.Port{port(80), port(90)})
	if got := f.reconcile(t, node.Name); !slices.Equal(got, []string{"create " + second, "delete " + first}) {
		t.Fatalf("port 90 added: actions %v", got)
	}
	f.sync(t)

	// Drained: the placeholder goes and is not made again.
	drained := virtualNode("worker", corev1.Taint{Key: kubeoceanv1alpha1.TaintVirtualNodeDeleting, Effect: corev1.TaintEffectNoSchedule})
	_ = f.nodes.Update(drained)
	if got := f.reconcile(t, node.Name); !slices.Equal(got, []string{"delete " + second}) {
		t.Fatalf("drained: actions %v", got)
	}
	f.sync(t)
	if got := f.reconcile(t, node.Name); len(got) != 0 {
		t.Fatalf("drained, again: actions %v", got)
	}
}

func TestReconcileIgnoresOthersPods(t *testing.T) {
	f := newFixture(t)
	node := virtualNode("worker")
	_ = f.nodes.Add(node)
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "other", Labels: map[string]string{
		hostports.LabelPlaceholder: "true", kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean,
		kubeoceanv1alpha1.LabelBindingUID: "another-binding",
	}}, Spec: corev1.PodSpec{NodeName: node.Name}}
	_ = f.holders.Add(other)
	if got := f.reconcile(t, node.Name); len(got) != 0 {
		t.Fatalf("actions %v on another binding's placeholder", got)
	}
}
