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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	kodns "github.com/kubeocean/kubeocean/internal/dns"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	mountNamespace = "kubeocean-dns-worker"
	bindingUID     = "4f1c2a9e-dns-test"
)

func mirror(vns, vname string, spec corev1.ServiceSpec, uid string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: kubeoceanv1alpha1.PhysicalName(vns, vname), Namespace: mountNamespace,
			Labels: map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean, kubeoceanv1alpha1.LabelBindingUID: uid},
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualName: vname, kubeoceanv1alpha1.AnnotationVirtualNamespace: vns,
			},
		},
		Spec: spec,
	}
}

// startServer runs kubeocean-dns in the test process against the physical
// cluster and returns its address once its caches have synced.
func startServer(t *testing.T, kube kubernetes.Interface) string {
	t.Helper()
	opts := kodns.NewOptions()
	opts.Namespace, opts.BindingUID, opts.ListenAddress = mountNamespace, bindingUID, "127.0.0.1:0"
	opts.Upstreams, opts.UpstreamTimeout = []string{"127.0.0.1:9"}, 200*time.Millisecond
	server, runnables, err := kodns.Assemble(kube, opts, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = app.RunAll(ctx, runnables...) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(30 * time.Second)
	for !server.Ready() {
		if time.Now().After(deadline) {
			t.Fatal("the server's caches did not sync")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return server.Addr()
}

// answers queries addr over UDP (retrying over TCP when truncated) and
// returns the rcode and the answer data, e.g. "A 10.0.0.1", sorted.
func answers(t *testing.T, addr, name string, qtype uint16) (int, []string) {
	t.Helper()
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, qtype), addr)
	if err == nil && resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.Exchange(new(dns.Msg).SetQuestion(name, qtype), addr)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[qtype], err)
	}
	var out []string
	for _, rr := range resp.Answer {
		h := rr.Header()
		out = append(out, dns.TypeToString[h.Rrtype]+" "+strings.TrimPrefix(rr.String(), h.String()))
	}
	slices.Sort(out)
	return resp.Rcode, out
}

// eventually polls until check passes and returns how long it took.
func eventually(t *testing.T, within time.Duration, what string, check func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !check() {
		if time.Since(start) > within {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

func TestServesMirrorsOfARealCluster(t *testing.T) {
	ctx := t.Context()
	kube := physicalCluster.Clientset()
	must(t, create(ctx, kube, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mountNamespace}}))
	must(t, create(ctx, kube, testenv.KwokNode("dns-node", "8", "16Gi", nil)))

	// A StatefulSet-like pair behind a headless mirror with a selector: the
	// EndpointSlice controller writes its slices, with the pods' hostnames
	// (their subdomain is the mirror's name) and the mirror's labels.
	db := mirror("shop", "db", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": "db"},
		Ports: []corev1.ServicePort{{Name: "peer", Port: 7000}}}, bindingUID)
	web := mirror("shop", "web", corev1.ServiceSpec{Selector: map[string]string{"app": "db"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}, bindingUID)
	other := mirror("shop", "other", corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}, "another-binding")
	for _, svc := range []*corev1.Service{db, web, other} {
		must(t, create(ctx, kube, svc))
	}
	for _, host := range []string{"db-0", "db-1"} {
		pod := testenv.KwokPod(mountNamespace, host, "dns-node", "100m", "64Mi", map[string]string{"app": "db"})
		pod.Spec.Hostname, pod.Spec.Subdomain = host, db.Name
		must(t, create(ctx, kube, pod))
	}
	addr := startServer(t, kube)

	webIP := get(t, kube, web.Name).Spec.ClusterIP
	if rcode, got := answers(t, addr, "web.shop.svc.cluster.local.", dns.TypeA); rcode != dns.RcodeSuccess || !slices.Equal(got, []string{"A " + webIP}) {
		t.Errorf("web: %s %q, want the mirror's ClusterIP %s", dns.RcodeToString[rcode], got, webIP)
	}
	var podIPs []string
	eventually(t, 60*time.Second, "the controller's slices of db with both pods ready", func() bool {
		_, got := answers(t, addr, "db.shop.svc.cluster.local.", dns.TypeA)
		podIPs = got
		return len(got) == 2
	})
	for _, host := range []string{"db-0", "db-1"} {
		if _, got := answers(t, addr, host+".db.shop.svc.cluster.local.", dns.TypeA); len(got) != 1 || !slices.Contains(podIPs, got[0]) {
			t.Errorf("%s: %q, want one of %q", host, got, podIPs)
		}
	}
	if _, got := answers(t, addr, "_peer._tcp.db.shop.svc.cluster.local.", dns.TypeSRV); len(got) != 2 || !strings.HasSuffix(got[0], " 7000 db-0.db.shop.svc.cluster.local.") {
		t.Errorf("SRV of db: %q", got)
	}
	if rcode, got := answers(t, addr, "other.shop.svc.cluster.local.", dns.TypeA); rcode != dns.RcodeNameError {
		t.Errorf("another binding's mirror: %s %q, want NXDOMAIN", dns.RcodeToString[rcode], got)
	}
	if rcode, _ := answers(t, addr, "kubernetes.default.svc.cluster.local.", dns.TypeA); rcode != dns.RcodeNameError {
		t.Errorf("kubernetes.default without --kubernetes-address: %s, want NXDOMAIN", dns.RcodeToString[rcode])
	}

	testManualSliceFollowsReadiness(t, kube, addr)

	must(t, kube.CoreV1().Services(mountNamespace).Delete(ctx, web.Name, metav1.DeleteOptions{}))
	took := eventually(t, 5*time.Second, "web to be NXDOMAIN after its mirror is deleted", func() bool {
		rcode, _ := answers(t, addr, "web.shop.svc.cluster.local.", dns.TypeA)
		return rcode == dns.RcodeNameError
	})
	t.Logf("deleted mirror → NXDOMAIN in %v", took)
}

// testManualSliceFollowsReadiness: a selectorless mirror whose slice is
// written by hand, as the syncer does; a readiness change shows within 1 s.
func testManualSliceFollowsReadiness(t *testing.T, kube kubernetes.Interface, addr string) {
	ctx := t.Context()
	manual := mirror("shop", "manual", corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}, bindingUID)
	must(t, create(ctx, kube, manual))
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: manual.Name + "-x", Namespace: mountNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: manual.Name, discoveryv1.LabelManagedBy: "kubeocean",
			kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean, kubeoceanv1alpha1.LabelBindingUID: bindingUID,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"192.0.2.10"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			{Addresses: []string{"192.0.2.11"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
		},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80)}},
	}
	created, err := kube.DiscoveryV1().EndpointSlices(mountNamespace).Create(ctx, slice, metav1.CreateOptions{})
	must(t, err)
	both := []string{"A 192.0.2.10", "A 192.0.2.11"}
	eventually(t, 5*time.Second, "the manual slice's endpoints", func() bool {
		_, got := answers(t, addr, "manual.shop.svc.cluster.local.", dns.TypeA)
		return slices.Equal(got, both)
	})

	created.Endpoints[1].Conditions.Ready = ptr.To(false)
	_, err = kube.DiscoveryV1().EndpointSlices(mountNamespace).Update(ctx, created, metav1.UpdateOptions{})
	must(t, err)
	took := eventually(t, time.Second, "the not-ready endpoint to leave the answer", func() bool {
		_, got := answers(t, addr, "manual.shop.svc.cluster.local.", dns.TypeA)
		return slices.Equal(got, []string{"A 192.0.2.10"})
	})
	t.Logf("endpoint readiness change → answer in %v", took)
	if rcode, _ := answers(t, addr, "192-0-2-11.manual.shop.svc.cluster.local.", dns.TypeA); rcode != dns.RcodeNameError {
		t.Errorf("the not-ready endpoint's own name: %s, want NXDOMAIN", dns.RcodeToString[rcode])
	}
}

func get(t *testing.T, kube kubernetes.Interface, name string) *corev1.Service {
	t.Helper()
	svc, err := kube.CoreV1().Services(mountNamespace).Get(t.Context(), name, metav1.GetOptions{})
	must(t, err)
	return svc
}

func create[T interface {
	*corev1.Namespace | *corev1.Node | *corev1.Service | *corev1.Pod
}](ctx context.Context, kube kubernetes.Interface, obj T) error {
	var err error
	switch o := any(obj).(type) {
	case *corev1.Namespace:
		_, err = kube.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Node:
		_, err = kube.CoreV1().Nodes().Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Service:
		_, err = kube.CoreV1().Services(mountNamespace).Create(ctx, o, metav1.CreateOptions{})
	case *corev1.Pod:
		_, err = kube.CoreV1().Pods(mountNamespace).Create(ctx, o, metav1.CreateOptions{})
	}
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
