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
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/klog/v2/ktesting"
)

// startOnly serves s (without informers) until the test ends.
func startOnly(t *testing.T, s *Server) {
	t.Helper()
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// deadUpstream is an address where nothing answers.
func deadUpstream(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return pc.LocalAddr().String() // bound but never read: queries time out
}

func TestForwardsOutsideTheDomainAndTriesTheNextUpstream(t *testing.T) {
	up := startUpstream(t, answerA)
	s, _, reg := testServer(t, []string{deadUpstream(t), up.addr})

	for range 2 {
		if resp := ask(t, s, "example.org.", dns.TypeA); !slices.Equal(rdata(resp), []string{"A 192.0.2.1"}) {
			t.Fatalf("example.org: %s %q, want the upstream's answer", dns.RcodeToString[resp.Rcode], rdata(resp))
		}
	}
	// The second query goes straight to the upstream that answered.
	if got := testutil.ToFloat64(s.metrics.forwards.WithLabelValues(forwardFailed)); got != 1 {
		t.Errorf("failed forwards = %v, want 1 (the dead upstream, once)", got)
	}
	if got := testutil.ToFloat64(s.metrics.forwards.WithLabelValues(forwardAnswered)); got != 2 {
		t.Errorf("answered forwards = %v, want 2", got)
	}
	if n, err := testutil.GatherAndCount(reg, "kubeocean_dns_query_duration_seconds"); err != nil || n == 0 {
		t.Errorf("latency histogram not exported: %d, %v", n, err)
	}
	// Counted once the answer is written, so after the client has it.
	waitFor(t, "queries{type=A,rcode=NOERROR} = 2", func() bool {
		return testutil.ToFloat64(s.metrics.queries.WithLabelValues("A", "NOERROR")) == 2
	})
}

func TestServfailWhenNoUpstreamAnswers(t *testing.T) {
	s, _, _ := testServer(t, []string{deadUpstream(t), deadUpstream(t)})
	if resp := ask(t, s, "example.org.", dns.TypeA); resp.Rcode != dns.RcodeServerFailure {
		t.Errorf("got %s, want SERVFAIL", dns.RcodeToString[resp.Rcode])
	}
	if got := testutil.ToFloat64(s.metrics.forwards.WithLabelValues(forwardExhausted)); got != 1 {
		t.Errorf("exhausted forwards = %v, want 1", got)
	}
	waitFor(t, "queries{type=A,rcode=SERVFAIL} = 1", func() bool {
		return testutil.ToFloat64(s.metrics.queries.WithLabelValues("A", "SERVFAIL")) == 1
	})
}

// TestForwardedAnswersNeverNameTheClusterDomain: an upstream that is the
// physical cluster's DNS would name its own Services in reverse answers.
func TestForwardedAnswersNeverNameTheClusterDomain(t *testing.T) {
	up := startUpstream(t, func(req *dns.Msg) *dns.Msg {
		m := new(dns.Msg).SetReply(req)
		m.Answer = []dns.RR{&dns.PTR{Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: 30}, Ptr: "secret.kube-system.svc.cluster.local."}}
		return m
	})
	s, _, _ := testServer(t, []string{up.addr})
	resp := ask(t, s, "9.9.9.10.in-addr.arpa.", dns.TypePTR)
	if resp.Rcode != dns.RcodeNameError || len(resp.Answer) != 0 {
		t.Errorf("got %s %q, want NXDOMAIN and nothing of the physical Service", dns.RcodeToString[resp.Rcode], rdata(resp))
	}
	if up.queries.Load() != 1 {
		t.Errorf("unknown reverse name not forwarded: %d queries", up.queries.Load())
	}
}

func TestTruncatesOverUDPAndAnswersInFullOverTCP(t *testing.T) {
	up := startUpstream(t, answerA)
	db := mirrorService("shop", "big", headlessSpec())
	s1 := slice("big-1", db)
	for i := range 100 {
		s1.Endpoints = append(s1.Endpoints, ep(fmt.Sprintf("10.3.%d.%d", i/200, i%200+1), "", true))
	}
	s, _, _ := testServer(t, []string{up.addr}, db, s1)
	const name = "big.shop.svc.cluster.local."

	udp := query(t, s.Addr(), "udp", name, dns.TypeA, 0)
	udp.Compress = true // as it came on the wire
	if !udp.Truncated || len(udp.Answer) >= 100 || udp.Len() > dns.MinMsgSize {
		t.Errorf("UDP without EDNS0: TC=%v, %d records, %d bytes; want TC and at most 512 bytes", udp.Truncated, len(udp.Answer), udp.Len())
	}
	tcp := query(t, s.Addr(), "tcp", name, dns.TypeA, 0)
	if tcp.Truncated || len(tcp.Answer) != 100 {
		t.Errorf("TCP: TC=%v, %d records; want all 100", tcp.Truncated, len(tcp.Answer))
	}
	edns := query(t, s.Addr(), "udp", name, dns.TypeA, 4096)
	if edns.Truncated || len(edns.Answer) != 100 || edns.IsEdns0() == nil {
		t.Errorf("UDP with a 4096-byte EDNS0 buffer: TC=%v, %d records, OPT %v; want all 100 with OPT", edns.Truncated, len(edns.Answer), edns.IsEdns0())
	}
	// A client library that retries over TCP on TC gets the whole answer.
	c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
	resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Truncated {
		c.Net = "tcp"
		if resp, _, err = c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), s.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	if len(resp.Answer) != 100 {
		t.Errorf("after the TCP retry: %d records, want 100", len(resp.Answer))
	}
}
