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

package informers_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes/fake"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	"github.com/kubeocean/kubeocean/pkg/informers"
)

func node(name string, nodeLabels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: nodeLabels,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
}

// One Cluster per cluster: controllers ask for informers by scope, and
// those of one scope share a watch and a cache. A scope with a selector
// lists and watches only what it selects, and every object is stored
// without managedFields.
func ExampleCluster() {
	kube := fake.NewClientset(
		node("vnode-worker-1-a", map[string]string{"kubeocean.io/cluster-binding": "worker-1"}),
		node("vnode-worker-2-a", map[string]string{"kubeocean.io/cluster-binding": "worker-2"}),
		node("control-plane", nil),
	)
	ocean := kubeoceanfake.NewClientset(&kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}})
	cluster := informers.NewCluster("virtual", kube, ocean, 0)

	// Ask for every informer before Start.
	mine := informers.Scope{LabelSelector: "kubeocean.io/cluster-binding=worker-1"}
	nodes := cluster.Kube(mine).Core().V1().Nodes().Lister()
	bindings := cluster.Kubeocean(informers.Scope{}).Kubeocean().V1alpha1().ClusterBindings().Lister()
	// The same scope gives the same factory, so one watch serves both.
	fmt.Println("shared:", cluster.Kube(mine) == cluster.Kube(informers.Scope{LabelSelector: mine.LabelSelector}))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	cluster.Start(ctx)
	if err := cluster.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	cached, _ := nodes.List(labels.Everything())
	for _, n := range cached {
		fmt.Println("node:", n.Name, "managedFields:", len(n.ManagedFields))
	}
	binding, _ := bindings.Get("worker-1")
	fmt.Println("binding:", binding.Name)

	cancel()
	cluster.Shutdown()
	// Output:
	// shared: true
	// node: vnode-worker-1-a managedFields: 0
	// binding: worker-1
}
