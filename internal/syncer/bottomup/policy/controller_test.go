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

package policy

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceaninformerfactory "github.com/kubeocean/kubeocean/generated/informers/externalversions"
)

func TestPolicyHandler(t *testing.T) {
	ours := newPolicy("ours", binding)
	theirs := newPolicy("theirs", "binding-b")
	// Another virtual cluster's binding of the same name, mounted elsewhere.
	pinnedElsewhere := newPolicy("pinned-elsewhere", binding)
	pinnedElsewhere.Spec.MountNamespace = "mount-b"
	pinnedHere := newPolicy("pinned-here", binding)
	pinnedHere.Spec.MountNamespace = mount
	movedAway := newPolicy("ours", "binding-b")
	movedAway.ResourceVersion = "2"
	resync := ours.DeepCopy()

	tests := []struct {
		name  string
		event func(h cache.ResourceEventHandler)
		want  []string
	}{
		{"a policy of this binding", func(h cache.ResourceEventHandler) { h.OnAdd(ours, false) }, []string{"ours"}},
		{"a policy of another binding", func(h cache.ResourceEventHandler) { h.OnAdd(theirs, false) }, nil},
		{"a policy pinned to another mount namespace", func(h cache.ResourceEventHandler) { h.OnAdd(pinnedElsewhere, false) }, nil},
		{"a policy pinned to this mount namespace", func(h cache.ResourceEventHandler) { h.OnAdd(pinnedHere, false) }, []string{"pinned-here"}},
		{"a policy moved to another binding", func(h cache.ResourceEventHandler) { h.OnUpdate(ours, movedAway) }, []string{"ours"}},
		{"a resync", func(h cache.ResourceEventHandler) { h.OnUpdate(ours, resync) }, nil},
		{"a deleted policy", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ours", Obj: ours})
		}, []string{"ours"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			tt.event(policyHandler(binding, mount, func(k string) { got = append(got, k) }))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

func TestVirtualNodeHandler(t *testing.T) {
	node := func(rv, bindingName, policy string) *corev1.Node {
		n := virtualNode("vnode-cid-a", bindingName, policy)
		n.ResourceVersion = rv
		if policy == "" {
			delete(n.Annotations, kubeoceanv1alpha1.AnnotationResourceLeasingPolicy)
		}
		return n
	}
	statusOnly := node("2", binding, "p")
	statusOnly.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}

	tests := []struct {
		name  string
		event func(h cache.ResourceEventHandler)
		want  []string
	}{
		{"a node lent by a policy", func(h cache.ResourceEventHandler) { h.OnAdd(node("1", binding, "p"), false) }, []string{"p"}},
		{"a node without a policy", func(h cache.ResourceEventHandler) { h.OnAdd(node("1", binding, ""), false) }, nil},
		{"a node of another binding", func(h cache.ResourceEventHandler) { h.OnAdd(node("1", "binding-b", "p"), false) }, nil},
		{"a node moved to another policy", func(h cache.ResourceEventHandler) {
			h.OnUpdate(node("1", binding, "p"), node("2", binding, "q"))
		}, []string{"p", "q"}},
		{"a node let go of its policy", func(h cache.ResourceEventHandler) {
			h.OnUpdate(node("1", binding, "p"), node("2", binding, ""))
		}, []string{"p"}},
		{"a status update", func(h cache.ResourceEventHandler) { h.OnUpdate(node("1", binding, "p"), statusOnly) }, nil},
		{"a deleted node", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "vnode-cid-a", Obj: node("1", binding, "p")})
		}, []string{"p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			tt.event(virtualNodeHandler(binding, func(k string) { got = append(got, k) }))
			if !slices.Equal(got, tt.want) {
				t.Fatalf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNewRequiresItsDependencies(t *testing.T) {
	client := fake.NewClientset()
	policies := kubeoceaninformerfactory.NewSharedInformerFactory(client, 0).Kubeocean().V1alpha1().ResourceLeasingPolicies()
	nodes := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Nodes()

	_, err := New(Options{Client: client.KubeoceanV1alpha1(), Policies: policies, VirtualNodes: nodes})
	if err == nil || !strings.Contains(err.Error(), "BindingName") || !strings.Contains(err.Error(), "MountNamespace") || !strings.Contains(err.Error(), "Recorder") {
		t.Fatalf("New without BindingName, MountNamespace and Recorder = %v", err)
	}
	c, err := New(Options{BindingName: binding, MountNamespace: mount, Client: client.KubeoceanV1alpha1(), Policies: policies, VirtualNodes: nodes,
		Recorder: record.NewFakeRecorder(1)})
	if err != nil || c.Name() != ControllerName {
		t.Fatalf("New = %v, %v", c, err)
	}
}
