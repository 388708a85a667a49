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
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
)

var testOwner = ownership.Owner{ClusterID: "c1", BindingUID: "uid-1"}

func virtualService(mutate func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"kubeocean.io/binding-uid": "forged"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.96.0.10", ExternalIPs: []string{"1.2.3.4"},
			Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http"), NodePort: 30080, AppProtocol: ptr.To("http")},
				{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053},
			},
			SessionAffinity:          corev1.ServiceAffinityClientIP,
			SessionAffinityConfig:    &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](60)}},
			PublishNotReadyAddresses: true,
			InternalTrafficPolicy:    ptr.To(corev1.ServiceInternalTrafficPolicyLocal),
			ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

func TestMirrorOfALoadBalancer(t *testing.T) {
	m := Mirror(virtualService(nil), testOwner, "mount")
	if m.Namespace != "mount" || m.Name != kubeoceanv1alpha1.PhysicalName("shop", "web") {
		t.Errorf("mirror %s/%s", m.Namespace, m.Name)
	}
	if m.Labels[kubeoceanv1alpha1.LabelBindingUID] != "uid-1" || m.Labels[kubeoceanv1alpha1.LabelClusterID] != "c1" ||
		m.Labels[kubeoceanv1alpha1.LabelManagedBy] != kubeoceanv1alpha1.ManagedByKubeocean {
		t.Errorf("labels %v", m.Labels)
	}
	if m.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "web" || m.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != "shop" {
		t.Errorf("annotations %v", m.Annotations)
	}
	s := m.Spec
	if s.Type != corev1.ServiceTypeClusterIP || s.ClusterIP != "" || len(s.ExternalIPs) > 0 || s.ExternalTrafficPolicy != "" {
		t.Errorf("a load balancer becomes a plain ClusterIP Service allocated physically: %+v", s)
	}
	if len(s.Ports) != 2 || s.Ports[0].NodePort != 0 || s.Ports[1].NodePort != 0 {
		t.Fatalf("ports %+v", s.Ports)
	}
	if p := s.Ports[0]; p.Name != "http" || p.TargetPort != intstr.FromString("http") || *p.AppProtocol != "http" || p.Protocol != corev1.ProtocolTCP {
		t.Errorf("named port %+v", p)
	}
	if p := s.Ports[1]; p.Protocol != corev1.ProtocolUDP || p.TargetPort != intstr.FromInt32(53) {
		t.Errorf("port without target %+v", p)
	}
	want := tenantmeta.PodSelector(testOwner, "shop", map[string]string{"app": "web"})
	if len(s.Selector) != len(want) || s.Selector[tenantmeta.LabelKey("app")] != "web" ||
		s.Selector[kubeoceanv1alpha1.LabelVirtualNamespace] != "shop" || s.Selector[kubeoceanv1alpha1.LabelBindingUID] != "uid-1" {
		t.Errorf("selector %v, want %v", s.Selector, want)
	}
	if s.SessionAffinity != corev1.ServiceAffinityClientIP || *s.SessionAffinityConfig.ClientIP.TimeoutSeconds != 60 ||
		!s.PublishNotReadyAddresses || *s.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyLocal {
		t.Errorf("affinity, readiness or traffic policy not followed: %+v", s)
	}
}

func TestMirrorClasses(t *testing.T) {
	headless := Mirror(virtualService(func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ClusterIP = corev1.ServiceTypeClusterIP, corev1.ClusterIPNone
	}), testOwner, "m")
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || headless.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Errorf("headless: %+v", headless.Spec)
	}
	alias := Mirror(virtualService(func(s *corev1.Service) {
		s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
	}), testOwner, "m")
	if alias.Spec.Type != corev1.ServiceTypeExternalName || alias.Spec.ExternalName != "db.example.com" || alias.Spec.Selector != nil || alias.Spec.ClusterIP != "" {
		t.Errorf("ExternalName: %+v", alias.Spec)
	}
	plain := Mirror(virtualService(nil), testOwner, "m")
	for _, c := range []struct {
		from, to *corev1.Service
		recreate bool
	}{
		{plain, headless, true}, {headless, plain, true}, {plain, alias, true}, {alias, headless, true},
		{plain, Mirror(virtualService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }), testOwner, "m"), false},
	} {
		if got := needsRecreate(c.from, c.to); got != c.recreate {
			t.Errorf("%s → %s: recreate %v, want %v", describe(c.from), describe(c.to), got, c.recreate)
		}
	}
}

func describe(s *corev1.Service) string { return string(s.Spec.Type) + "/" + s.Spec.ClusterIP }

func TestMirrorWithoutSelector(t *testing.T) {
	m := Mirror(virtualService(func(s *corev1.Service) { s.Spec.Selector = nil }), testOwner, "m")
	if m.Spec.Selector != nil {
		t.Errorf("a Service without selector gets one: %v (the physical controller would overwrite the syncer's slices)", m.Spec.Selector)
	}
}

func TestApplyMirrorKeepsAllocationsAndWritesOnlyChanges(t *testing.T) {
	desired := Mirror(virtualService(nil), testOwner, "m")
	current := desired.DeepCopy()
	current.Spec.ClusterIP, current.Spec.ClusterIPs = "10.0.0.7", []string{"10.0.0.7"}
	current.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	if _, changed := applyMirror(current, desired); changed {
		t.Error("the same mirror with the physical allocations is taken for a change")
	}
	changedPorts := Mirror(virtualService(func(s *corev1.Service) { s.Spec.Ports[0].Port = 8080 }), testOwner, "m")
	updated, changed := applyMirror(current, changedPorts)
	if !changed || updated.Spec.Ports[0].Port != 8080 || updated.Spec.ClusterIP != "10.0.0.7" {
		t.Errorf("port change: changed %v, %+v", changed, updated.Spec)
	}
}

func TestMirrorSlicesKeepReachableEndpoints(t *testing.T) {
	mirror := Mirror(virtualService(func(s *corev1.Service) { s.Spec.Selector = nil }), testOwner, "m")
	mirror.UID = "mirror-uid"
	virtual := []*discoveryv1.EndpointSlice{{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "web-manual"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"192.0.2.1"}},
			{Addresses: []string{"10.1.0.5"}, NodeName: ptr.To("vnode-c1-n1"), Hostname: ptr.To("a"),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: "mine"}},
			{Addresses: []string{"10.9.0.5"}, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "elsewhere"}},
		},
	}}
	pods := func(namespace, name string) (string, bool) {
		return kubeoceanv1alpha1.PhysicalName(namespace, name), namespace == "shop" && name == "mine"
	}
	out := MirrorSlices(mirror, virtual, testOwner, pods)
	if len(out) != 1 {
		t.Fatalf("%d slices", len(out))
	}
	s := out[0]
	if s.Namespace != "m" || s.Name != kubeoceanv1alpha1.PhysicalName("shop", "web-manual") ||
		s.Labels[discoveryv1.LabelServiceName] != mirror.Name || s.Labels[discoveryv1.LabelManagedBy] != kubeoceanv1alpha1.EndpointSliceManagedBySyncer ||
		!testOwner.Owns(s) || s.OwnerReferences[0].UID != "mirror-uid" || s.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "web" {
		t.Errorf("slice meta %+v", s.ObjectMeta)
	}
	if len(s.Endpoints) != 2 || s.Endpoints[0].Addresses[0] != "192.0.2.1" || s.Endpoints[1].Addresses[0] != "10.1.0.5" {
		t.Fatalf("endpoints %+v: want the address without a pod and the binding's pod only", s.Endpoints)
	}
	mine := s.Endpoints[1]
	if mine.NodeName != nil || *mine.Hostname != "a" || mine.TargetRef.Namespace != "m" || mine.TargetRef.Name != kubeoceanv1alpha1.PhysicalName("shop", "mine") {
		t.Errorf("the binding's pod's endpoint %+v", mine)
	}
	if *s.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v", s.Ports)
	}
	if _, changed := applySlice(s, MirrorSlices(mirror, virtual, testOwner, pods)[0]); changed {
		t.Error("the same slice is taken for a change")
	}
}
