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
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2"
)

// Config is what a Server answers from and where it forwards.
type Config struct {
	// Domain is the cluster domain, e.g. "cluster.local".
	Domain string
	Index  *Index
	// Upstreams are host:port resolvers for names outside the domain.
	Upstreams       []string
	UpstreamTimeout time.Duration
	// KubernetesAddress answers kubernetes.default.svc; invalid: NXDOMAIN.
	KubernetesAddress netip.Addr
	Metrics           *Metrics
}

// Server answers DNS queries over UDP and TCP: names of the cluster domain
// from the index (never forwarded), reverse names of the addresses the
// index knows, and everything else through the upstreams.
type Server struct {
	domain    string
	index     *Index
	resolver  *resolver
	forwarder *forwarder
	metrics   *Metrics

	udp net.PacketConn
	tcp net.Listener
	// ctx bounds the forwarded queries; set by Serve before the first query.
	ctx context.Context
}

// NewServer returns a server for cfg; Listen, then Serve.
func NewServer(cfg Config) *Server {
	s := &Server{domain: fqdn(cfg.Domain), index: cfg.Index, metrics: cfg.Metrics, ctx: context.Background()}
	s.forwarder = &forwarder{upstreams: cfg.Upstreams, timeout: cfg.UpstreamTimeout, domain: s.domain, metrics: cfg.Metrics}
	s.resolver = &resolver{domain: s.domain, index: cfg.Index, kubernetes: cfg.KubernetesAddress, external: s.resolveExternal}
	return s
}

// Listen binds address (host:port) for UDP and TCP on the same port; port 0
// picks one free for both.
func (s *Server) Listen(address string) error {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		tcp, err := net.Listen("tcp", address)
		if err != nil {
			return err
		}
		port := tcp.Addr().(*net.TCPAddr).Port
		udp, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err == nil {
			s.tcp, s.udp = tcp, udp
			return nil
		}
		_ = tcp.Close()
		// A picked port may be taken for UDP only; pick another.
		if portText != "0" || attempt == 10 {
			return err
		}
	}
}

// Addr is the bound address, the same port for UDP and TCP.
func (s *Server) Addr() string { return s.tcp.Addr().String() }

// Serve answers queries until ctx ends, then stops both listeners.
func (s *Server) Serve(ctx context.Context) error {
	if s.udp == nil {
		return errors.New("dns: Serve before Listen")
	}
	logger := klog.FromContext(ctx)
	s.ctx = ctx
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	servers := []*dns.Server{
		{PacketConn: s.udp, Handler: s, NotifyStartedFunc: notify},
		{Listener: s.tcp, Handler: s, NotifyStartedFunc: notify, ReadTimeout: 5 * time.Second, IdleTimeout: func() time.Duration { return 10 * time.Second }},
	}
	errs := make(chan error, len(servers))
	for _, srv := range servers {
		go func() { errs <- srv.ActivateAndServe() }()
	}
	var err error
	for range servers {
		select {
		case <-started:
		case err = <-errs:
			return fmt.Errorf("serving DNS on %s: %w", s.Addr(), err)
		}
	}
	logger.Info("Serving DNS", "address", s.Addr(), "domain", s.domain)
	select {
	case <-ctx.Done():
	case err = <-errs:
		err = fmt.Errorf("serving DNS on %s: %w", s.Addr(), err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.ShutdownContext(shutdownCtx)
	}
	return err
}

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	start := time.Now()
	resp, zone := s.respond(req)
	if _, udp := w.LocalAddr().(*net.UDPAddr); udp {
		// Whatever does not fit the client's buffer is left out with TC
		// set, so the client asks again over TCP.
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil && int(opt.UDPSize()) > size {
			size = int(opt.UDPSize())
		}
		resp.Truncate(size)
	}
	if err := w.WriteMsg(resp); err != nil {
		klog.FromContext(s.ctx).V(4).Info("Writing a DNS answer failed", "client", w.RemoteAddr(), "err", err)
	}
	var qtype uint16
	if len(req.Question) == 1 {
		qtype = req.Question[0].Qtype
	}
	s.metrics.observeQuery(qtype, resp.Rcode, zone, start)
}

// respond builds the answer to req and tells where it came from.
func (s *Server) respond(req *dns.Msg) (*dns.Msg, string) {
	switch {
	case req.Response || len(req.Question) != 1:
		return negative(req, dns.RcodeFormatError), zoneOther
	case req.Opcode != dns.OpcodeQuery:
		return negative(req, dns.RcodeNotImplemented), zoneOther
	}
	q := req.Question[0]
	name := strings.ToLower(q.Name)
	if dns.IsSubDomain(s.domain, name) {
		switch {
		case q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY:
			return negative(req, dns.RcodeRefused), zoneCluster
		case !s.index.Synced():
			// Not NXDOMAIN, which clients would cache: the name may exist.
			return negative(req, dns.RcodeServerFailure), zoneCluster
		}
		return s.authoritative(req, s.resolver.resolve(s.ctx, q.Name, q.Qtype, 0)), zoneCluster
	}
	if addr, ok := reverseAddr(name); ok && s.index.Synced() && (q.Qtype == dns.TypePTR || q.Qtype == dns.TypeANY) {
		if a, ok := s.resolver.reverse(q.Name, addr); ok {
			return s.authoritative(req, a), zoneCluster
		}
	}
	resp, err := s.forwarder.exchange(s.ctx, req)
	if err != nil {
		klog.FromContext(s.ctx).V(2).Info("No upstream answered", "name", q.Name, "type", dns.TypeToString[q.Qtype], "err", err)
		return negative(req, dns.RcodeServerFailure), zoneForward
	}
	return resp, zoneForward
}

// authoritative turns an answer of the cluster domain into a message; a
// negative one carries the SOA, whose minimum makes clients cache it 5 s.
func (s *Server) authoritative(req *dns.Msg, a answer) *dns.Msg {
	m := negative(req, a.rcode)
	m.Authoritative = true
	m.Answer, m.Extra = a.answer, a.extra
	if a.rcode == dns.RcodeNameError || (a.rcode == dns.RcodeSuccess && len(a.answer) == 0) {
		m.Ns = []dns.RR{s.resolver.soa()}
	}
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(dns.DefaultMsgSize, opt.Do())
	}
	return m
}

// resolveExternal asks the upstreams for the target of an ExternalName
// Service outside the cluster domain.
func (s *Server) resolveExternal(ctx context.Context, name string, qtype uint16) []dns.RR {
	req := new(dns.Msg).SetQuestion(name, qtype)
	resp, err := s.forwarder.exchange(ctx, req)
	if err != nil || resp.Rcode != dns.RcodeSuccess {
		return nil
	}
	return resp.Answer
}

// negative is an empty reply to req with rcode.
func negative(req *dns.Msg, rcode int) *dns.Msg {
	m := new(dns.Msg).SetRcode(req, rcode)
	m.RecursionAvailable = true
	m.Compress = true
	return m
}

// fqdn is name in lower case with the final dot.
func fqdn(name string) string {
	return dns.Fqdn(strings.ToLower(strings.TrimSuffix(name, ".")))
}
