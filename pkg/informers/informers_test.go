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

package informers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
)

func testPod(namespace, name string, lbls map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, Labels: lbls,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
			Annotations:   map[string]string{"large": "annotation"},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{
			Name: "c", Image: "busybox", Command: []string{"sleep", "3600"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		}}},
	}
}

// slimPod keeps only what capacity math reads of a pod.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	slim := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: p.Namespace, Name: p.Name, UID: p.UID, ResourceVersion: p.ResourceVersion, Labels: p.Labels,
	}}
	slim.Spec.NodeName = p.Spec.NodeName
	for _, c := range p.Spec.Containers {
		slim.Spec.Containers = append(slim.Spec.Containers, corev1.Container{Name: c.Name, Resources: c.Resources})
	}
	slim.Status.Phase = p.Status.Phase
	return slim, nil
}

func startCluster(t *testing.T, c *Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	c.Start(ctx)
	t.Cleanup(func() { cancel(); c.Shutdown() })
	if err := c.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestScopesSelectAndSlim(t *testing.T) {
	kube := kubefake.NewClientset(
		testPod("mount", "managed", map[string]string{"kubeocean.io/managed-by": "kubeocean"}),
		testPod("mount", "unmanaged", nil),
		testPod("other", "managed-elsewhere", map[string]string{"kubeocean.io/managed-by": "kubeocean"}),
		testPod("other", "foreign", nil),
	)
	c := NewCluster("physical", kube, kubeoceanfake.NewClientset(), 0)

	managedScope := Scope{Namespace: "mount", LabelSelector: "kubeocean.io/managed-by=kubeocean"}
	managed := c.Kube(managedScope).Core().V1().Pods().Lister()
	if c.Kube(managedScope) != c.Kube(Scope{Namespace: "mount", LabelSelector: "kubeocean.io/managed-by=kubeocean"}) {
		t.Fatal("equal scopes must share one factory")
	}
	slimScope := Scope{Slim: slimPod, SlimName: "capacity"}
	all := c.Kube(slimScope).Core().V1().Pods().Lister()
	if c.Kube(slimScope) == c.Kube(Scope{}) {
		t.Fatal("a slimmed scope must not share the factory of the unslimmed one")
	}
	startCluster(t, c)

	got, err := managed.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "managed" {
		t.Fatalf("managed scope lists %v, want only mount/managed", names(got))
	}
	if len(got[0].ManagedFields) != 0 {
		t.Fatal("managedFields were stored")
	}
	if got[0].Annotations["large"] == "" || len(got[0].Spec.Containers[0].Command) == 0 {
		t.Fatal("the unslimmed scope lost fields other than managedFields")
	}

	everything, err := all.List(labels.Everything())
	if err != nil {
		t.Fatal(err)
	}
	if len(everything) != 4 {
		t.Fatalf("slim scope lists %d pods, want 4", len(everything))
	}
	for _, p := range everything {
		if p.Annotations != nil || len(p.Spec.Containers[0].Command) != 0 || p.ManagedFields != nil {
			t.Fatalf("pod %s was not slimmed: %+v", p.Name, p.ObjectMeta)
		}
		if p.Spec.Containers[0].Resources.Requests.Cpu().String() != "1" {
			t.Fatalf("pod %s lost its requests", p.Name)
		}
	}
}

func TestKubeoceanInformers(t *testing.T) {
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "night", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "worker-1"},
	}
	c := NewCluster("physical", kubefake.NewClientset(), kubeoceanfake.NewClientset(policy), 0)
	lister := c.Kubeocean(Scope{}).Kubeocean().V1alpha1().ResourceLeasingPolicies().Lister()
	startCluster(t, c)

	got, err := lister.Get("night")
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Cluster != "worker-1" || got.ManagedFields != nil {
		t.Fatalf("policy stored as %+v", got)
	}
}

func TestWaitForCacheSyncNamesWhatDidNotSync(t *testing.T) {
	kube := kubefake.NewClientset()
	kube.PrependReactor("list", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("physical cluster unreachable")
	})
	c := NewCluster("physical", kube, kubeoceanfake.NewClientset(), 0)
	c.Kube(Scope{}).Core().V1().Nodes().Informer()
	c.Kube(Scope{}).Core().V1().Pods().Informer()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	c.Start(ctx)
	defer c.Shutdown()
	err := c.WaitForCacheSync(ctx)
	if err == nil {
		t.Fatal("WaitForCacheSync returned nil although nodes cannot be listed")
	}
	if msg := err.Error(); !strings.Contains(msg, "Node") || strings.Contains(msg, "Pod") {
		t.Fatalf("error %q should name the node informer and only it", msg)
	}
}

func TestDropManagedFieldsLeavesTombstonesAlone(t *testing.T) {
	tombstone := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: testPod("ns", "p", nil)}
	got, err := DropManagedFields(tombstone)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.(cache.DeletedFinalStateUnknown); !ok {
		t.Fatalf("tombstone became %T", got)
	}
}

func TestSlimWithoutNamePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("a Slim without SlimName must be refused")
		}
	}()
	NewCluster("x", kubefake.NewClientset(), kubeoceanfake.NewClientset(), 0).Kube(Scope{Slim: slimPod})
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestPodsWithoutIndexesKeepsScopeAndSlim(t *testing.T) {
	kube := kubefake.NewClientset(
		testPod("mount", "managed", map[string]string{"kubeocean.io/managed-by": "kubeocean"}),
		testPod("other", "foreign", nil),
	)
	c := NewCluster("physical", kube, kubeoceanfake.NewClientset(), 0)
	scope := Scope{LabelSelector: "kubeocean.io/managed-by!=kubeocean", Slim: slimPod, SlimName: "capacity"}
	informer := c.PodsWithoutIndexes(scope)
	if len(informer.GetIndexer().GetIndexers()) != 0 {
		t.Fatalf("indexes %v, want none", informer.GetIndexer().GetIndexers())
	}
	if c.Kube(scope).Core().V1().Pods().Informer() != informer {
		t.Fatal("the factory of the scope must hand out the same pod informer")
	}
	startCluster(t, c)

	objs := informer.GetStore().List()
	if len(objs) != 1 {
		t.Fatalf("stored %d pods, want only other/foreign", len(objs))
	}
	if p := objs[0].(*corev1.Pod); p.Name != "foreign" || p.Annotations != nil {
		t.Fatalf("stored %s/%s with annotations %v; want other/foreign, slimmed", p.Namespace, p.Name, p.Annotations)
	}
}
