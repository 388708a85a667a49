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

package dns

import (
	"context"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
)

const (
	testNamespace = "kubeocean-worker"
	testBinding   = "uid-1"
)

// mirrorService is a mirror Service of virtual namespace/name for testBinding.
func mirrorService(namespace, name string, spec corev1.ServiceSpec) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubeoceanv1alpha1.PhysicalName(namespace, name), Namespace: testNamespace,
			Labels: map[string]string{
				kubeoceanv1alpha1.LabelManagedBy:  kubeoceanv1alpha1.ManagedByKubeocean,
				kubeoceanv1alpha1.LabelBindingUID: testBinding,
			},
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualName:      name,
				kubeoceanv1alpha1.AnnotationVirtualNamespace: namespace,
			},
		},
		Spec: spec,
	}
}

func clusterIPSpec(ips ...string) corev1.ServiceSpec {
	return corev1.ServiceSpec{
		Type: corev1.ServiceTypeClusterIP, ClusterIP: ips[0], ClusterIPs: ips,
		Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80}, {Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}},
	}
}

func headlessSpec() corev1.ServiceSpec {
	return corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: corev1.ClusterIPNone,
		Ports: []corev1.ServicePort{{Name: "peer", Protocol: corev1.ProtocolTCP, Port: 7000}}}
}

// ep is an endpoint with one address; hostname "" leaves it unset.
func ep(addr, hostname string, ready bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
	if hostname != "" {
		e.Hostname = ptr.To(hostname)
	}
	return e
}

// slice is an EndpointSlice of the mirror svc for testBinding, with port
// peer/7000 as the Service's endpoints would have.
func slice(name string, svc *corev1.Service, endpoints ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	addressType := discoveryv1.AddressTypeIPv4
	if len(endpoints) > 0 && strings.Contains(endpoints[0].Addresses[0], ":") {
		addressType = discoveryv1.AddressTypeIPv6
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNamespace,
			Labels: map[string]string{
				discoveryv1.LabelServiceName:      svc.Name,
				kubeoceanv1alpha1.LabelManagedBy:  kubeoceanv1alpha1.ManagedByKubeocean,
				kubeoceanv1alpha1.LabelBindingUID: testBinding,
			},
		},
		AddressType: addressType,
		Endpoints:   endpoints,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("peer"), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To[int32](7000)}},
	}
}

// upstream is a fake resolver that counts the queries it gets and answers
// each with answer(query), or not at all when answer returns nil.
type upstream struct {
	addr    string
	queries atomic.Int32
	mu      sync.Mutex
	names   []string
}

func startUpstream(t *testing.T, answer func(req *dns.Msg) *dns.Msg) *upstream {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: pc.LocalAddr().String()}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		u.queries.Add(1)
		u.mu.Lock()
		u.names = append(u.names, req.Question[0].Name)
		u.mu.Unlock()
		if resp := answer(req); resp != nil {
			_ = w.WriteMsg(resp)
		}
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return u
}

// answerA answers every query with A 192.0.2.1.
func answerA(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg).SetReply(req)
	m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP("192.0.2.1")}}
	return m
}

// testServer runs a server with its informers on a fake clientset holding
// objs, forwarding to upstreams, until the test ends; it returns once the
// caches have synced.
func testServer(t *testing.T, upstreams []string, objs ...runtime.Object) (*Server, *fake.Clientset, *prometheus.Registry) {
	t.Helper()
	kube := fake.NewClientset(objs...)
	opts := NewOptions()
	opts.Namespace, opts.BindingUID, opts.ListenAddress = testNamespace, testBinding, "127.0.0.1:0"
	opts.Upstreams, opts.UpstreamTimeout = upstreams, 300*time.Millisecond
	opts.KubernetesAddress = "10.96.0.1"
	reg := prometheus.NewRegistry()
	server, runnables, err := Assemble(kube, opts, reg)
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = app.RunAll(ctx, runnables...) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the caches to sync", server.Ready)
	return server, kube, reg
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// query asks addr over network ("udp" or "tcp"); bufsize > 0 adds EDNS0.
func query(t *testing.T, addr, network, name string, qtype uint16, bufsize uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg).SetQuestion(name, qtype)
	if bufsize > 0 {
		m.SetEdns0(bufsize, false)
	}
	c := &dns.Client{Net: network, Timeout: 3 * time.Second}
	resp, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("query %s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return resp
}

// ask queries over UDP without EDNS0.
func ask(t *testing.T, s *Server, name string, qtype uint16) *dns.Msg {
	t.Helper()
	return query(t, s.Addr(), "udp", name, qtype, 0)
}

// rdata lists the answer section's data, e.g. "A 10.0.0.1", in order.
func rdata(m *dns.Msg) []string {
	var out []string
	for _, rr := range m.Answer {
		h := rr.Header()
		out = append(out, dns.TypeToString[h.Rrtype]+" "+strings.TrimPrefix(rr.String(), h.String()))
	}
	return out
}
