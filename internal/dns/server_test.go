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
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// fixtures are the mirrors of one virtual cluster's Services: web
// (ClusterIP, dual-stack), db (headless StatefulSet of two, one not
// ready), cache (headless, publishNotReadyAddresses), alias (ExternalName
// to web), ext (ExternalName outside), empty (headless, no endpoints).
func fixtures() []runtime.Object {
	web := mirrorService("shop", "web", clusterIPSpec("10.0.0.10", "fd00::10"))
	db := mirrorService("shop", "db", headlessSpec())
	cacheSpec := headlessSpec()
	cacheSpec.PublishNotReadyAddresses = true
	cache := mirrorService("shop", "cache", cacheSpec)
	return []runtime.Object{
		web, db, cache,
		slice("db-1", db, ep("10.1.0.1", "db-0", true), ep("10.1.0.2", "db-1", false), ep("10.1.0.3", "", true)),
		slice("cache-1", cache, ep("10.2.0.1", "", true), ep("10.2.0.2", "", false)),
		mirrorService("shop", "alias", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "web.shop.svc.cluster.local"}),
		mirrorService("shop", "ext", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.org"}),
		mirrorService("shop", "empty", headlessSpec()),
	}
}

func TestAnswersTheSpecification(t *testing.T) {
	up := startUpstream(t, answerA)
	s, _, _ := testServer(t, []string{up.addr}, fixtures()...)
	cases := []struct {
		name  string
		qtype uint16
		rcode int
		want  []string
	}{
		{"web.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.0.0.10"}},
		{"WEB.Shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.0.0.10"}},
		{"web.shop.svc.cluster.local.", dns.TypeAAAA, dns.RcodeSuccess, []string{"AAAA fd00::10"}},
		{"_http._tcp.web.shop.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess, []string{"SRV 0 100 80 web.shop.svc.cluster.local."}},
		{"_dns._udp.web.shop.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess, []string{"SRV 0 100 53 web.shop.svc.cluster.local."}},
		{"_http._udp.web.shop.svc.cluster.local.", dns.TypeSRV, dns.RcodeNameError, nil},
		{"db.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.1.0.1", "A 10.1.0.3"}},
		{"db-0.db.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.1.0.1"}},
		{"db-1.db.shop.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"10-1-0-3.db.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.1.0.3"}},
		{"_peer._tcp.db.shop.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess, []string{
			"SRV 0 50 7000 db-0.db.shop.svc.cluster.local.", "SRV 0 50 7000 10-1-0-3.db.shop.svc.cluster.local."}},
		{"cache.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.2.0.1", "A 10.2.0.2"}},
		{"empty.shop.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"alias.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"CNAME web.shop.svc.cluster.local.", "A 10.0.0.10"}},
		{"ext.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"CNAME example.org.", "A 192.0.2.1"}},
		{"kubernetes.default.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, []string{"A 10.96.0.1"}},
		{"_https._tcp.kubernetes.default.svc.cluster.local.", dns.TypeSRV, dns.RcodeSuccess, []string{"SRV 0 100 443 kubernetes.default.svc.cluster.local."}},
		{"dns-version.cluster.local.", dns.TypeTXT, dns.RcodeSuccess, []string{`TXT "1.1.0"`}},
		{"10.0.0.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"PTR web.shop.svc.cluster.local."}},
		{"1.0.1.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"PTR db-0.db.shop.svc.cluster.local."}},
		{"0.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"PTR web.shop.svc.cluster.local."}},
		{"1.0.96.10.in-addr.arpa.", dns.TypePTR, dns.RcodeSuccess, []string{"PTR kubernetes.default.svc.cluster.local."}},
		{"nope.shop.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"web.other.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, nil},
		{"nope.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"1-2-3-4.shop.pod.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
		{"kube-dns.kube-system.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name+"/"+dns.TypeToString[tc.qtype], func(t *testing.T) {
			resp := ask(t, s, tc.name, tc.qtype)
			if resp.Rcode != tc.rcode || !slices.Equal(rdata(resp), tc.want) {
				t.Fatalf("got %s %q, want %s %q", dns.RcodeToString[resp.Rcode], rdata(resp), dns.RcodeToString[tc.rcode], tc.want)
			}
			for _, rr := range resp.Answer {
				if rr.Header().Ttl != 5 && rr.Header().Name != "example.org." {
					t.Errorf("TTL %d, want 5: %s", rr.Header().Ttl, rr)
				}
			}
			if resp.Rcode == dns.RcodeNameError || len(resp.Answer) == 0 {
				checkNegative(t, resp)
			}
		})
	}
	if n := up.queries.Load(); n != 1 {
		t.Errorf("upstream got %d queries (%q), want 1: example.org. for the ExternalName", n, up.names)
	}
}

// checkNegative checks a negative answer carries the zone's SOA, whose
// minimum makes clients cache it 5 s.
func checkNegative(t *testing.T, resp *dns.Msg) {
	t.Helper()
	if len(resp.Ns) != 1 {
		t.Fatalf("authority section %v, want the SOA", resp.Ns)
	}
	soa, ok := resp.Ns[0].(*dns.SOA)
	if !ok || soa.Hdr.Name != "cluster.local." || soa.Minttl != 5 || soa.Hdr.Ttl != 5 {
		t.Errorf("authority %v, want the SOA of cluster.local. with TTL and minimum 5", resp.Ns[0])
	}
	if !resp.Authoritative {
		t.Error("negative answer of the cluster domain is not authoritative")
	}
}

func TestKubernetesNameWithoutAddressIsNXDOMAIN(t *testing.T) {
	up := startUpstream(t, answerA)
	idx := NewIndex(testBinding, "cluster.local", nil)
	idx.MarkSynced()
	s := NewServer(Config{Domain: "cluster.local", Index: idx, Upstreams: []string{up.addr}, UpstreamTimeout: 300 * time.Millisecond})
	startOnly(t, s)
	if resp := ask(t, s, "kubernetes.default.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Errorf("without --kubernetes-address: %s %q, want NXDOMAIN", dns.RcodeToString[resp.Rcode], rdata(resp))
	}
}

func TestOnlyTheBindingsOwnMirrorsAnswer(t *testing.T) {
	up := startUpstream(t, answerA)
	other := mirrorService("shop", "other", clusterIPSpec("10.0.0.20"))
	other.Labels[kubeoceanv1alpha1.LabelBindingUID] = "uid-2"
	foreign := mirrorService("shop", "foreign", clusterIPSpec("10.0.0.21"))
	delete(foreign.Labels, kubeoceanv1alpha1.LabelManagedBy)
	misnamed := mirrorService("shop", "misnamed", clusterIPSpec("10.0.0.22"))
	misnamed.Name = "misnamed"
	db := mirrorService("shop", "db", headlessSpec())
	otherSlice := slice("db-other", db, ep("10.9.9.9", "intruder", true))
	otherSlice.Labels[kubeoceanv1alpha1.LabelBindingUID] = "uid-2"
	s, _, _ := testServer(t, []string{up.addr}, other, foreign, misnamed, db, otherSlice, slice("db-1", db, ep("10.1.0.1", "db-0", true)))

	for _, name := range []string{"other", "foreign", "misnamed"} {
		if resp := ask(t, s, name+".shop.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeNameError {
			t.Errorf("%s: %s %q, want NXDOMAIN", name, dns.RcodeToString[resp.Rcode], rdata(resp))
		}
	}
	if resp := ask(t, s, "db.shop.svc.cluster.local.", dns.TypeA); !slices.Equal(rdata(resp), []string{"A 10.1.0.1"}) {
		t.Errorf("db: %q, want only the binding's own slice's 10.1.0.1", rdata(resp))
	}
	if n := up.queries.Load(); n != 0 {
		t.Errorf("names of the cluster domain were forwarded: %q", up.names)
	}
}

func TestServfailUntilSynced(t *testing.T) {
	up := startUpstream(t, answerA)
	idx := NewIndex(testBinding, "cluster.local", nil)
	s := NewServer(Config{Domain: "cluster.local", Index: idx, Upstreams: []string{up.addr}, UpstreamTimeout: 300 * time.Millisecond})
	startOnly(t, s)

	if resp := ask(t, s, "web.shop.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("before sync: %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
	if resp := ask(t, s, "example.org.", dns.TypeA); !slices.Equal(rdata(resp), []string{"A 192.0.2.1"}) {
		t.Errorf("before sync, a name outside the domain: %q, want it forwarded", rdata(resp))
	}
	idx.MarkSynced()
	if resp := ask(t, s, "web.shop.svc.cluster.local.", dns.TypeA); resp.Rcode != dns.RcodeNameError {
		t.Errorf("after sync: %s, want NXDOMAIN", dns.RcodeToString[resp.Rcode])
	}
	if n := up.queries.Load(); n != 1 {
		t.Errorf("upstream got %q, want only example.org.", up.names)
	}
}
