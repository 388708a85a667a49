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
	"net/netip"
	"slices"
	"sort"
	"strings"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// serviceKind is how a virtual Service answers A/AAAA queries.
type serviceKind int

const (
	kindClusterIP    serviceKind = iota // the mirror's ClusterIPs
	kindHeadless                        // the addresses of its endpoints
	kindExternalName                    // a CNAME
)

// virtualKey is a virtual Service's namespace and name, the index key.
type virtualKey struct{ namespace, name string }

// port is a named port, as SRV records name it: _<name>._<proto>.
type port struct {
	name, proto string
	number      uint16
}

// endpoint is one answerable endpoint of a headless Service: its host
// label (the pod's hostname, or a name derived from its address) and
// the ports of the EndpointSlice it came from.
type endpoint struct {
	host  string
	addrs []netip.Addr
	ports []port
}

// service is everything one virtual Service answers. It is built once per
// change of its mirror or slices and never modified afterwards, so queries
// read it without a lock.
type service struct {
	key          virtualKey
	kind         serviceKind
	clusterIPs   []netip.Addr
	externalName string // lower-case FQDN
	ports        []port // of the Service spec, for ClusterIP SRV records
	endpoints    []endpoint
	// addrs are the distinct addresses of endpoints, hosts their
	// addresses by host label (headless only).
	addrs []netip.Addr
	hosts map[string][]netip.Addr
	// answers are the A and AAAA records of the Service's own name in
	// lower case, built once: most queries ask for exactly that name.
	answers map[uint16][]dns.RR
	owner   string
}

// buildService computes the records of a mirror with its EndpointSlices.
// epSlices may be nil; it is sorted in place.
func buildService(key virtualKey, mirror *corev1.Service, epSlices []*discoveryv1.EndpointSlice) *service {
	s := &service{key: key, kind: kindClusterIP}
	switch {
	case mirror.Spec.Type == corev1.ServiceTypeExternalName:
		s.kind = kindExternalName
		s.externalName = strings.ToLower(strings.TrimSuffix(mirror.Spec.ExternalName, ".")) + "."
		if len(validation.IsDNS1123Subdomain(strings.TrimSuffix(s.externalName, "."))) > 0 {
			s.externalName = "" // answers as a Service without addresses
		}
		return s
	case mirror.Spec.ClusterIP == corev1.ClusterIPNone:
		s.kind = kindHeadless
	}
	for _, p := range mirror.Spec.Ports {
		if p.Name != "" && p.Port > 0 && p.Port < 1<<16 {
			s.ports = append(s.ports, port{name: strings.ToLower(p.Name), proto: protocolLabel(p.Protocol), number: uint16(p.Port)})
		}
	}
	if s.kind == kindClusterIP {
		ips := mirror.Spec.ClusterIPs
		if len(ips) == 0 && mirror.Spec.ClusterIP != "" {
			ips = []string{mirror.Spec.ClusterIP}
		}
		s.clusterIPs = parseAddrs(ips)
		return s
	}
	s.addEndpoints(epSlices, mirror.Spec.PublishNotReadyAddresses)
	return s
}

// addEndpoints keeps the ready endpoints of slices (all of them with
// publishNotReady), in a stable order so that answers do not flap.
func (s *service) addEndpoints(epSlices []*discoveryv1.EndpointSlice, publishNotReady bool) {
	sort.Slice(epSlices, func(i, j int) bool { return epSlices[i].Name < epSlices[j].Name })
	s.hosts = map[string][]netip.Addr{}
	seen := map[netip.Addr]bool{}
	for _, slice := range epSlices {
		if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
			continue // FQDN endpoints have no address to answer with
		}
		ports := slicePorts(slice.Ports)
		for _, ep := range slice.Endpoints {
			if !publishNotReady && !isReady(ep.Conditions) {
				continue
			}
			addrs := parseAddrs(ep.Addresses)
			if len(addrs) == 0 {
				continue
			}
			host := addressLabel(addrs[0])
			if ep.Hostname != nil && len(validation.IsDNS1123Label(*ep.Hostname)) == 0 {
				host = strings.ToLower(*ep.Hostname)
			}
			s.endpoints = append(s.endpoints, endpoint{host: host, addrs: addrs, ports: ports})
			for _, a := range addrs {
				if !slices.Contains(s.hosts[host], a) {
					s.hosts[host] = append(s.hosts[host], a)
				}
				if !seen[a] {
					seen[a] = true
					s.addrs = append(s.addrs, a)
				}
			}
		}
	}
}

// isReady follows the EndpointSlice API: an unknown readiness counts as
// ready, and terminating endpoints are never ready.
func isReady(c discoveryv1.EndpointConditions) bool {
	return c.Ready == nil || *c.Ready
}

func slicePorts(in []discoveryv1.EndpointPort) []port {
	var out []port
	for _, p := range in {
		if p.Name == nil || *p.Name == "" || p.Port == nil || *p.Port <= 0 || *p.Port >= 1<<16 {
			continue
		}
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		out = append(out, port{name: strings.ToLower(*p.Name), proto: protocolLabel(proto), number: uint16(*p.Port)})
	}
	return out
}

func protocolLabel(p corev1.Protocol) string {
	if p == "" {
		return "tcp"
	}
	return strings.ToLower(string(p))
}

// parseAddrs keeps the valid addresses of in, unmapped (an IPv4-mapped
// IPv6 address answers A queries).
func parseAddrs(in []string) []netip.Addr {
	var out []netip.Addr
	for _, s := range in {
		if a, err := netip.ParseAddr(s); err == nil && !a.Is4In6() && a.Zone() == "" {
			out = append(out, a)
		}
	}
	return out
}

// addressLabel names an endpoint without a hostname by its address, as the
// specification does for headless Services: 10-1-2-3, or the IPv6 address
// written out in full with dashes.
func addressLabel(a netip.Addr) string {
	if a.Is4() {
		return strings.ReplaceAll(a.String(), ".", "-")
	}
	return strings.ReplaceAll(a.StringExpanded(), ":", "-")
}

// recordCount is how many address records the service holds, for the
// records gauge.
func (s *service) recordCount() int {
	switch s.kind {
	case kindExternalName:
		return 1
	case kindHeadless:
		return len(s.addrs)
	default:
		return len(s.clusterIPs)
	}
}

// reverseNames lists the addresses that answer PTR queries with a name of
// s, and that name (relative to the Service's own name).
func (s *service) reverseNames(serviceFQDN string) map[netip.Addr]string {
	out := map[netip.Addr]string{}
	for _, a := range s.clusterIPs {
		out[a] = serviceFQDN
	}
	for _, ep := range s.endpoints {
		for _, a := range ep.addrs {
			if _, ok := out[a]; !ok {
				out[a] = ep.host + "." + serviceFQDN
			}
		}
	}
	return out
}

// prebuild builds the address answers of the Service's own name, fqdn.
func (s *service) prebuild(fqdn string) {
	addrs := s.clusterIPs
	if s.kind == kindHeadless {
		addrs = s.addrs
	}
	s.owner = fqdn
	s.answers = map[uint16][]dns.RR{}
	for _, qtype := range []uint16{dns.TypeA, dns.TypeAAAA} {
		rrs := addressRecords(fqdn, addrs, qtype)
		// Full: whoever appends to an answer copies it rather than write
		// into the array that every answer shares.
		s.answers[qtype] = rrs[:len(rrs):len(rrs)]
	}
}

// addressAnswer returns the records of addrs for owner, prebuilt when
// owner is the name they were built for.
func (s *service) addressAnswer(owner string, addrs []netip.Addr, qtype uint16) []dns.RR {
	if rrs, ok := s.answers[qtype]; ok && owner == s.owner {
		return rrs
	}
	return addressRecords(owner, addrs, qtype)
}
