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

package service

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
)

// nodesOf: vnode-c1-* are this binding's (b1), vnode-c2-* b2's, vnode-c3-*
// b3's; any other node is the virtual cluster's own.
func nodesOf(name string) (string, bool) {
	for prefix, binding := range map[string]string{"vnode-c1-": "b1", "vnode-c2-": "b2", "vnode-c3-": "b3"} {
		if strings.HasPrefix(name, prefix) {
			return binding, true
		}
	}
	return "", false
}

func endpoint(ip, pod, node string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
		NodeName: ptr.To(node), Zone: ptr.To("z"), Hostname: ptr.To(pod),
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: pod},
	}
}

func controllerSlice(name string, port int32, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: endpointSliceController,
		}, OwnerReferences: []metav1.OwnerReference{{Kind: "Service", Name: "web", UID: "web-uid"}}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port)}},
		Endpoints:   endpoints,
	}
}

// ownPods: "mine-*" run on this binding.
func ownPods(namespace, name string) (string, bool) {
	return kubeoceanv1alpha1.PhysicalName(namespace, name), strings.HasPrefix(name, "mine")
}

func TestJoinedSlicesHoldOnlyJoinedPodsAndCountTheRest(t *testing.T) {
	mirror := Mirror(virtualService(nil), testOwner, "m")
	mirror.UID = "mirror-uid"
	virtual := []*discoveryv1.EndpointSlice{
		controllerSlice("web-a", 8080,
			endpoint("10.1.0.1", "mine-0", "vnode-c1-n1", true),
			endpoint("10.2.0.2", "b2-0", "vnode-c2-n1", true),
			endpoint("10.2.0.1", "b2-1", "vnode-c2-n2", false),
			endpoint("10.3.0.1", "b3-0", "vnode-c3-n1", true),
			endpoint("10.3.0.2", "b3-1", "vnode-c3-n1", true),
			endpoint("10.3.0.3", "b3-2", "vnode-c3-n1", false),
			endpoint("10.9.0.1", "own-0", "control-1", true)),
		// Another port set (a named target port resolved otherwise).
		controllerSlice("web-b", 9090, endpoint("10.2.0.9", "b2-9", "vnode-c2-n1", true)),
	}
	places := &Places{Binding: "b1", Joined: []string{"b2"}, BindingOfNode: nodesOf}
	out, left := JoinedSlices(mirror, virtual, testOwner, ownPods, places)

	if len(out) != 2 {
		t.Fatalf("%d slices, want one per port set of b2's endpoints: %+v", len(out), out)
	}
	a := out[0]
	if a.Name != mirror.Name+"-joined-0" || a.Namespace != "m" || a.Labels[discoveryv1.LabelServiceName] != mirror.Name ||
		a.Labels[discoveryv1.LabelManagedBy] != kubeoceanv1alpha1.EndpointSliceManagedBySyncer || !testOwner.Owns(a) ||
		a.OwnerReferences[0].UID != "mirror-uid" || a.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "web" {
		t.Errorf("slice meta %+v", a.ObjectMeta)
	}
	if *a.Ports[0].Port != 8080 || *a.Ports[0].Protocol != corev1.ProtocolTCP || *out[1].Ports[0].Port != 9090 {
		t.Errorf("ports %+v %+v", a.Ports, out[1].Ports)
	}
	// b2's two endpoints, sorted, the not-ready one kept with its condition.
	if len(a.Endpoints) != 2 || a.Endpoints[0].Addresses[0] != "10.2.0.1" || *a.Endpoints[0].Conditions.Ready ||
		a.Endpoints[1].Addresses[0] != "10.2.0.2" || !*a.Endpoints[1].Conditions.Ready {
		t.Fatalf("endpoints %+v", a.Endpoints)
	}
	if e := a.Endpoints[1]; e.TargetRef != nil || e.NodeName != nil || e.Zone != nil || *e.Hostname != "b2-0" {
		t.Errorf("a joined endpoint names no pod or node of this cluster and keeps its hostname: %+v", e)
	}
	want := map[string]int{"binding b3": 2, whereVirtualNodes: 1}
	if len(left) != len(want) || left["binding b3"] != 2 || left[whereVirtualNodes] != 1 {
		t.Errorf("left out %v, want %v (ready ones only, not the binding's own nor the joined)", left, want)
	}

	places.VirtualNodes = true
	out, left = JoinedSlices(mirror, virtual, testOwner, ownPods, places)
	if len(out[0].Endpoints) != 3 || len(left) != 1 {
		t.Errorf("with the virtual nodes joined: %d endpoints, left %v", len(out[0].Endpoints), left)
	}
	if out, left := JoinedSlices(mirror, virtual, testOwner, ownPods, &Places{Binding: "b1", BindingOfNode: nodesOf}); len(out) != 0 || left["binding b2"] != 2 {
		t.Errorf("isolated: %d slices, left %v", len(out), left)
	}
}

func TestSelectorlessSliceKeepsJoinedPodsByNode(t *testing.T) {
	mirror := Mirror(virtualService(func(s *corev1.Service) { s.Spec.Selector = nil }), testOwner, "m")
	virtual := []*discoveryv1.EndpointSlice{controllerSlice("manual", 80,
		endpoint("10.2.0.1", "b2-0", "vnode-c2-n1", true),
		endpoint("10.3.0.1", "b3-0", "vnode-c3-n1", true),
		discoveryv1.Endpoint{Addresses: []string{"10.4.0.1"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "nowhere"}})}
	out, left := mirrorSlices(mirror, virtual, testOwner, ownPods, &Places{Binding: "b1", Joined: []string{"b2"}, BindingOfNode: nodesOf})
	if len(out) != 1 || len(out[0].Endpoints) != 1 || out[0].Endpoints[0].Addresses[0] != "10.2.0.1" || out[0].Endpoints[0].TargetRef != nil {
		t.Fatalf("slices %+v", out)
	}
	if left["binding b3"] != 1 || left[whereUnknown] != 1 {
		t.Errorf("left out %v", left)
	}
}

// syncWorld is a Controller whose caches are seeded indexers and whose
// physical client is a fake.
func syncWorld(t *testing.T, objs ...runtime.Object) (*Controller, *fake.Clientset, *record.FakeRecorder) {
	t.Helper()
	index := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	bindings, services, slices, pods, nodes, kubeoceanNodes, mirrors, mirrorSlices := index(), index(), index(), index(), index(), index(), index(), index()
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *kubeoceanv1alpha1.ClusterBinding:
			err = bindings.Add(o)
		case *corev1.Service:
			if o.Namespace == "m" {
				err = mirrors.Add(o)
			} else {
				err = services.Add(o)
			}
		case *discoveryv1.EndpointSlice:
			err = slices.Add(o)
		case *corev1.Pod:
			err = pods.Add(o)
		case *corev1.Node:
			err = kubeoceanNodes.Add(o)
			if o.Labels[kubeoceanv1alpha1.LabelClusterBinding] == "b1" {
				err = nodes.Add(o)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	client := fake.NewClientset()
	recorder := record.NewFakeRecorder(10)
	return &Controller{
		owner: testOwner, bindingName: "b1", mountNamespace: "m", client: client, recorder: recorder,
		bindings: kubeoceanlisters.NewClusterBindingLister(bindings), virtualServices: corev1listers.NewServiceLister(services),
		virtualSlices: discoverylisters.NewEndpointSliceLister(slices), virtualPods: corev1listers.NewPodLister(pods),
		virtualNodes: corev1listers.NewNodeLister(nodes), kubeoceanNodes: corev1listers.NewNodeLister(kubeoceanNodes),
		mirrors: corev1listers.NewServiceLister(mirrors), mirrorSlices: discoverylisters.NewEndpointSliceLister(mirrorSlices),
	}, client, recorder
}

func virtualNode(name, binding string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{kubeoceanv1alpha1.LabelClusterBinding: binding}}}
}

func TestSyncWritesJoinedSliceAndReportsTheRestOnce(t *testing.T) {
	virtual := virtualService(func(s *corev1.Service) { s.UID = "web-uid" })
	mirror := Mirror(virtual, testOwner, "m")
	mirror.UID = "mirror-uid"
	binding := &kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: "b1"}, Spec: kubeoceanv1alpha1.ClusterBindingSpec{
		Network: &kubeoceanv1alpha1.ClusterBindingNetwork{JoinedWith: []string{"b2"}}}}
	mine := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "mine-0"}, Spec: corev1.PodSpec{NodeName: "vnode-c1-n1"}}
	slice := controllerSlice("web-a", 8080,
		endpoint("10.1.0.1", "mine-0", "vnode-c1-n1", true),
		endpoint("10.2.0.1", "b2-0", "vnode-c2-n1", true),
		endpoint("10.3.0.1", "b3-0", "vnode-c3-n1", true))
	// A slice of an earlier Service of the name, and one written by hand:
	// neither tells this Service's endpoints.
	stale := controllerSlice("web-old", 8080, endpoint("10.3.0.7", "b3-7", "vnode-c3-n1", true))
	stale.OwnerReferences[0].UID = "earlier-uid"
	manual := controllerSlice("web-manual", 8080, endpoint("10.3.0.8", "b3-8", "vnode-c3-n1", true))
	manual.Labels[discoveryv1.LabelManagedBy] = "someone"
	c, client, recorder := syncWorld(t, virtual, mirror, binding, mine, slice, stale, manual,
		virtualNode("vnode-c1-n1", "b1"), virtualNode("vnode-c2-n1", "b2"), virtualNode("vnode-c3-n1", "b3"))

	key := cache.MetaObjectToName(virtual)
	for range 2 {
		if _, err := c.sync(t.Context(), key); err != nil {
			t.Fatal(err)
		}
	}
	var created []*discoveryv1.EndpointSlice
	for _, a := range client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "endpointslices" {
			created = append(created, a.(clienttesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice))
		}
	}
	if len(created) == 0 || created[0].Name != mirror.Name+"-joined-0" || len(created[0].Endpoints) != 1 || created[0].Endpoints[0].Addresses[0] != "10.2.0.1" {
		t.Fatalf("created slices %+v, want b2's pod's IP in %s-joined-0", created, mirror.Name)
	}
	events := drain(recorder)
	if len(events) != 1 || !strings.Contains(events[0], kubeoceanv1alpha1.ReasonEndpointsInOtherClusters) ||
		!strings.Contains(events[0], "1 ready endpoint(s)") || !strings.Contains(events[0], "1 on binding b3") {
		t.Fatalf("events %q, want one naming binding b3's one endpoint", events)
	}

	// A change of where: recorded again, once.
	slice.Endpoints = append(slice.Endpoints, endpoint("10.9.0.1", "own-0", "control-1", true))
	for range 2 {
		if _, err := c.sync(t.Context(), key); err != nil {
			t.Fatal(err)
		}
	}
	if events := drain(recorder); len(events) != 1 || !strings.Contains(events[0], "2 ready endpoint(s)") || !strings.Contains(events[0], "1 on "+whereVirtualNodes) {
		t.Errorf("events after the change %q", events)
	}
}

func drain(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
