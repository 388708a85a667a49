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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"k8s.io/klog/v2"
)

// forwarder sends the queries outside the cluster domain to the upstream
// resolvers: the one that last answered first, then the others in turn.
type forwarder struct {
	upstreams []string
	timeout   time.Duration
	domain    string
	metrics   *Metrics
	preferred atomic.Int32
	// idle holds open UDP sockets per upstream: a socket per query would
	// cost more system calls than the query itself.
	idle sync.Map // upstream → chan *dns.Conn
}

// idleSockets is how many open sockets per upstream wait for a query.
const idleSockets = 64

// exchange asks the upstreams for req and returns their answer with req's
// ID, or an error when none answered. An answer that names the cluster
// domain is turned into NXDOMAIN: the upstream may be the physical
// cluster's DNS, whose Services the virtual cluster must not see (a PTR of
// a physical ClusterIP, say).
func (f *forwarder) exchange(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	if len(f.upstreams) == 0 {
		f.metrics.forward(forwardExhausted)
		return nil, errors.New("no upstream resolvers")
	}
	query := req.Copy()
	// A fresh ID of our own, so that an off-path attacker cannot guess it
	// from the client's.
	query.Id = dns.Id()
	start := int(f.preferred.Load())
	var errs []error
	for i := range f.upstreams {
		n := (start + i) % len(f.upstreams)
		resp, err := f.exchangeWith(ctx, f.upstreams[n], query)
		if err != nil {
			f.metrics.forward(forwardFailed)
			klog.FromContext(ctx).V(4).Info("Upstream did not answer", "upstream", f.upstreams[n], "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", f.upstreams[n], err))
			continue
		}
		f.preferred.Store(int32(n))
		resp.Id = req.Id
		if f.namesClusterDomain(resp) {
			f.metrics.forward(forwardFiltered)
			return negative(req, dns.RcodeNameError), nil
		}
		f.metrics.forward(forwardAnswered)
		return resp, nil
	}
	f.metrics.forward(forwardExhausted)
	return nil, errors.Join(errs...)
}

// exchangeWith asks one upstream over UDP, and again over TCP when the
// answer was truncated, so the server can fit the whole answer to its own
// client's buffer.
func (f *forwarder) exchangeWith(ctx context.Context, upstream string, query *dns.Msg) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	resp, err := f.exchangeUDP(ctx, upstream, query)
	if err == nil && resp.Truncated {
		tcp := &dns.Client{Net: "tcp", Timeout: f.timeout}
		resp, _, err = tcp.ExchangeContext(ctx, query, upstream)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// exchangeUDP asks upstream over an idle socket, or a new one; a socket
// that failed is closed rather than kept, and answers to earlier queries
// that arrive late on a kept one are skipped by their ID.
func (f *forwarder) exchangeUDP(ctx context.Context, upstream string, query *dns.Msg) (*dns.Msg, error) {
	pool, _ := f.idle.LoadOrStore(upstream, make(chan *dns.Conn, idleSockets))
	idle := pool.(chan *dns.Conn)
	udp := &dns.Client{Net: "udp", Timeout: f.timeout, UDPSize: dns.DefaultMsgSize}
	var conn *dns.Conn
	select {
	case conn = <-idle:
	default:
		var err error
		if conn, err = udp.DialContext(ctx, upstream); err != nil {
			return nil, err
		}
	}
	resp, _, err := udp.ExchangeWithConnContext(ctx, query, conn)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	select {
	case idle <- conn:
	default:
		_ = conn.Close()
	}
	return resp, nil
}

// namesClusterDomain reports whether an answer holds a name of the cluster
// domain, as an owner or in the data of a record that points to a name.
func (f *forwarder) namesClusterDomain(resp *dns.Msg) bool {
	for _, section := range [][]dns.RR{resp.Answer, resp.Ns, resp.Extra} {
		for _, rr := range section {
			if rr.Header().Rrtype == dns.TypeOPT {
				continue
			}
			if f.inDomain(rr.Header().Name) || f.inDomain(target(rr)) {
				return true
			}
		}
	}
	return false
}

func (f *forwarder) inDomain(name string) bool {
	return name != "" && dns.IsSubDomain(f.domain, strings.ToLower(name))
}

// target is the name a record points to, or "".
func target(rr dns.RR) string {
	switch rr := rr.(type) {
	case *dns.CNAME:
		return rr.Target
	case *dns.PTR:
		return rr.Ptr
	case *dns.SRV:
		return rr.Target
	case *dns.DNAME:
		return rr.Target
	case *dns.NS:
		return rr.Ns
	case *dns.MX:
		return rr.Mx
	case *dns.SVCB:
		return rr.Target
	case *dns.HTTPS:
		return rr.Target
	}
	return ""
}
