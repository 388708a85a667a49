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
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

const (
	// ttl of every record served, and the negative TTL of the SOA.
	ttl = 5
	// schemaVersion is the version of the Kubernetes DNS specification
	// answered at dns-version.<domain>.
	schemaVersion = "1.1.0"
	// maxChase bounds the CNAME chain of ExternalName Services that point
	// at each other.
	maxChase = 8
)

// answer is the outcome of resolving one name in the cluster domain.
type answer struct {
	rcode  int
	answer []dns.RR
	extra  []dns.RR
}

var (
	nxdomain = answer{rcode: dns.RcodeNameError}
	nodata   = answer{rcode: dns.RcodeSuccess}
)

// resolver answers names of the cluster domain from the index.
type resolver struct {
	domain string // lower-case FQDN
	index  *Index
	// kubernetes is the virtual apiserver's address that
	// kubernetes.default.svc answers; invalid: NXDOMAIN.
	kubernetes netip.Addr
	// external resolves an ExternalName target outside the domain.
	external func(ctx context.Context, name string, qtype uint16) []dns.RR
}

// resolve answers (owner, qtype), owner in the cluster domain; name is
// owner in lower case.
func (r *resolver) resolve(ctx context.Context, owner string, qtype uint16, depth int) answer {
	name := strings.ToLower(owner)
	if name == r.domain {
		if qtype == dns.TypeSOA {
			return answer{answer: []dns.RR{r.soa()}}
		}
		return nodata
	}
	labels := dns.SplitDomainName(strings.TrimSuffix(name, "."+r.domain))
	n := len(labels)
	switch {
	case n == 1 && labels[0] == "dns-version":
		if qtype != dns.TypeTXT && qtype != dns.TypeANY {
			return nodata
		}
		return answer{answer: []dns.RR{&dns.TXT{Hdr: header(owner, dns.TypeTXT), Txt: []string{schemaVersion}}}}
	case n == 1 && labels[0] == "svc":
		return nodata // the parent of every Service name
	case n < 2 || labels[n-1] != "svc":
		return nxdomain
	case n == 2:
		if r.index.hasNamespace(labels[0]) {
			return nodata
		}
		return nxdomain
	}
	svc, ok := r.lookup(labels[n-2], labels[n-3])
	if !ok {
		return nxdomain
	}
	switch n {
	case 3:
		return r.serviceAnswer(ctx, svc, owner, qtype, depth)
	case 4:
		return r.hostAnswer(svc, owner, labels[0], qtype)
	case 5:
		return r.srvAnswer(svc, owner, labels[0], labels[1], qtype)
	}
	return nxdomain
}

// lookup finds a Service by virtual namespace and name; the virtual
// apiserver's own Service comes from --kubernetes-address.
func (r *resolver) lookup(namespace, name string) (*service, bool) {
	if namespace == "default" && name == "kubernetes" {
		if !r.kubernetes.IsValid() {
			return nil, false
		}
		return &service{
			key: virtualKey{namespace: namespace, name: name}, kind: kindClusterIP,
			clusterIPs: []netip.Addr{r.kubernetes}, ports: []port{{name: "https", proto: "tcp", number: 443}},
		}, true
	}
	svc := r.index.service(namespace, name)
	return svc, svc != nil
}

func (r *resolver) serviceAnswer(ctx context.Context, svc *service, owner string, qtype uint16, depth int) answer {
	switch svc.kind {
	case kindExternalName:
		return r.cname(ctx, svc, owner, qtype, depth)
	case kindHeadless:
		// The specification: a headless Service without ready endpoints
		// does not exist.
		if len(svc.addrs) == 0 {
			return nxdomain
		}
		return answer{answer: svc.addressAnswer(owner, svc.addrs, qtype)}
	default:
		return answer{answer: svc.addressAnswer(owner, svc.clusterIPs, qtype)}
	}
}

// cname answers an ExternalName Service with its CNAME, followed by the
// answer for the target: from the index inside the domain, else from the
// upstreams.
func (r *resolver) cname(ctx context.Context, svc *service, owner string, qtype uint16, depth int) answer {
	if svc.externalName == "" {
		return nodata
	}
	rr := &dns.CNAME{Hdr: header(owner, dns.TypeCNAME), Target: svc.externalName}
	if qtype == dns.TypeCNAME {
		return answer{answer: []dns.RR{rr}}
	}
	if depth >= maxChase {
		return answer{rcode: dns.RcodeServerFailure}
	}
	if r.inDomain(svc.externalName) {
		next := r.resolve(ctx, svc.externalName, qtype, depth+1)
		next.answer = append([]dns.RR{rr}, next.answer...)
		return next
	}
	out := answer{answer: []dns.RR{rr}}
	if r.external != nil {
		out.answer = append(out.answer, r.external(ctx, svc.externalName, qtype)...)
	}
	return out
}

// hostAnswer answers <host>.<svc>.<ns>.svc: an endpoint of a headless
// Service.
func (r *resolver) hostAnswer(svc *service, owner, host string, qtype uint16) answer {
	if strings.HasPrefix(host, "_") && len(r.srvRecords(svc, owner, host, "")) > 0 {
		return nodata // _<port>.<svc>...: the parent of SRV names
	}
	addrs, ok := svc.hosts[host]
	if svc.kind != kindHeadless || !ok {
		return nxdomain
	}
	return answer{answer: addressRecords(owner, addrs, qtype)}
}

// srvAnswer answers _<port>._<proto>.<svc>.<ns>.svc.
func (r *resolver) srvAnswer(svc *service, owner, portLabel, protoLabel string, qtype uint16) answer {
	if !strings.HasPrefix(portLabel, "_") || !strings.HasPrefix(protoLabel, "_") {
		return nxdomain
	}
	records := r.srvRecords(svc, owner, portLabel, protoLabel)
	if len(records) == 0 {
		return nxdomain
	}
	if qtype != dns.TypeSRV && qtype != dns.TypeANY {
		return nodata
	}
	out := answer{}
	seen := map[string]bool{}
	for _, rec := range records {
		out.answer = append(out.answer, rec.srv)
		if !seen[rec.srv.Target] {
			seen[rec.srv.Target] = true
			out.extra = append(out.extra, addressRecords(rec.srv.Target, rec.addrs, dns.TypeANY)...)
		}
	}
	return out
}

type srvRecord struct {
	srv   *dns.SRV
	addrs []netip.Addr
}

// srvRecords lists the SRV records of a named port; an empty protoLabel
// matches any protocol.
func (r *resolver) srvRecords(svc *service, owner, portLabel, protoLabel string) []srvRecord {
	portName, proto := strings.TrimPrefix(portLabel, "_"), strings.TrimPrefix(protoLabel, "_")
	matches := func(p port) bool { return p.name == portName && (protoLabel == "" || p.proto == proto) }
	serviceName := svc.key.name + "." + svc.key.namespace + ".svc." + r.domain
	var out []srvRecord
	switch svc.kind {
	case kindClusterIP:
		for _, p := range svc.ports {
			if matches(p) {
				out = append(out, srvRecord{srv: srv(owner, serviceName, p.number, 100), addrs: svc.clusterIPs})
			}
		}
	case kindHeadless:
		seen := map[string]bool{}
		for _, ep := range svc.endpoints {
			for _, p := range ep.ports {
				key := ep.host + "/" + p.proto + "/" + p.name
				if matches(p) && !seen[key] {
					seen[key] = true
					out = append(out, srvRecord{srv: srv(owner, ep.host+"."+serviceName, p.number, 0), addrs: svc.hosts[ep.host]})
				}
			}
		}
		// Equal shares of the weight, as the endpoints are equal peers.
		for _, rec := range out {
			rec.srv.Weight = uint16(100 / len(out))
		}
	}
	return out
}

// reverse answers a PTR query of an address the index knows.
func (r *resolver) reverse(owner string, addr netip.Addr) (answer, bool) {
	var names []string
	if r.kubernetes.IsValid() && addr == r.kubernetes {
		names = []string{"kubernetes.default.svc." + r.domain}
	} else {
		names = r.index.reverseNames(addr)
	}
	if len(names) == 0 {
		return answer{}, false
	}
	out := answer{}
	for _, n := range names {
		out.answer = append(out.answer, &dns.PTR{Hdr: header(owner, dns.TypePTR), Ptr: n})
	}
	return out, true
}

func (r *resolver) inDomain(name string) bool {
	return dns.IsSubDomain(r.domain, strings.ToLower(name))
}

// soa is the zone's SOA, whose minimum gives negative answers their TTL.
func (r *resolver) soa() *dns.SOA {
	return &dns.SOA{
		Hdr: header(r.domain, dns.TypeSOA), Ns: "ns.dns." + r.domain, Mbox: "hostmaster." + r.domain,
		Serial: 1, Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: ttl,
	}
}

func header(owner string, rrtype uint16) dns.RR_Header {
	return dns.RR_Header{Name: owner, Rrtype: rrtype, Class: dns.ClassINET, Ttl: ttl}
}

func srv(owner, target string, number, weight uint16) *dns.SRV {
	return &dns.SRV{Hdr: header(owner, dns.TypeSRV), Priority: 0, Weight: weight, Port: number, Target: target}
}

// addressRecords are the A (qtype A), AAAA (qtype AAAA) or both (ANY)
// records of addrs.
func addressRecords(owner string, addrs []netip.Addr, qtype uint16) []dns.RR {
	var out []dns.RR
	for _, a := range addrs {
		switch {
		case a.Is4() && (qtype == dns.TypeA || qtype == dns.TypeANY):
			out = append(out, &dns.A{Hdr: header(owner, dns.TypeA), A: a.AsSlice()})
		case a.Is6() && (qtype == dns.TypeAAAA || qtype == dns.TypeANY):
			out = append(out, &dns.AAAA{Hdr: header(owner, dns.TypeAAAA), AAAA: a.AsSlice()})
		}
	}
	return out
}

// reverseAddr parses an in-addr.arpa or ip6.arpa name.
func reverseAddr(name string) (netip.Addr, bool) {
	labels := dns.SplitDomainName(strings.ToLower(name))
	switch {
	case len(labels) == 6 && labels[4] == "in-addr" && labels[5] == "arpa":
		s := labels[3] + "." + labels[2] + "." + labels[1] + "." + labels[0]
		a, err := netip.ParseAddr(s)
		return a, err == nil && a.Is4()
	case len(labels) == 34 && labels[32] == "ip6" && labels[33] == "arpa":
		var b strings.Builder
		for i := 31; i >= 0; i-- {
			if len(labels[i]) != 1 {
				return netip.Addr{}, false
			}
			b.WriteString(labels[i])
			if i%4 == 0 && i > 0 {
				b.WriteByte(':')
			}
		}
		a, err := netip.ParseAddr(b.String())
		return a, err == nil && a.Is6()
	}
	return netip.Addr{}, false
}
