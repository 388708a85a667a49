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
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are what kubeocean-dns exports, in the process's registry.
type Metrics struct {
	queries  *prometheus.CounterVec
	forwards *prometheus.CounterVec
	duration *prometheus.HistogramVec
	services prometheus.Gauge
	records  prometheus.Gauge
}

// Forward results, the values of the result label of
// kubeocean_dns_forwards_total.
const (
	forwardAnswered  = "answered"  // an upstream answered
	forwardFailed    = "failed"    // one upstream did not answer in time or at all; the next is tried
	forwardExhausted = "exhausted" // none answered: SERVFAIL
	forwardFiltered  = "filtered"  // the answer named the cluster domain: NXDOMAIN instead
)

// Where a query was answered, the zone label of the latency histogram.
const (
	zoneCluster = "cluster" // from the index
	zoneForward = "forward" // by an upstream
	zoneOther   = "other"   // malformed queries
)

// NewMetrics registers the DNS metrics in reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubeocean_dns_queries_total",
			Help: "DNS queries answered, by query type and response code.",
		}, []string{"type", "rcode"}),
		forwards: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubeocean_dns_forwards_total",
			Help: "Queries sent to upstream resolvers, by result: answered, failed (the next upstream is tried), exhausted (SERVFAIL), filtered (the answer named the cluster domain).",
		}, []string{"result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kubeocean_dns_query_duration_seconds",
			Help: "Time from a query's arrival to its answer, by zone: cluster (answered from the index), forward (by an upstream), other.",
			// From tens of microseconds (the index) to seconds (a slow upstream).
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"zone"}),
		services: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubeocean_dns_services",
			Help: "Virtual Services the server answers for.",
		}),
		records: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "kubeocean_dns_address_records",
			Help: "Address records served: ClusterIPs, headless endpoint addresses and ExternalName CNAMEs.",
		}),
	}
	reg.MustRegister(m.queries, m.forwards, m.duration, m.services, m.records)
	return m
}

// knownTypes bounds the type label's values; others count as "other".
var knownTypes = map[uint16]bool{
	dns.TypeA: true, dns.TypeAAAA: true, dns.TypeSRV: true, dns.TypePTR: true, dns.TypeTXT: true,
	dns.TypeCNAME: true, dns.TypeSOA: true, dns.TypeNS: true, dns.TypeMX: true, dns.TypeANY: true,
	dns.TypeHTTPS: true, dns.TypeSVCB: true,
}

func (m *Metrics) observeQuery(qtype uint16, rcode int, zone string, start time.Time) {
	if m == nil {
		return
	}
	typ := "other"
	if knownTypes[qtype] {
		typ = dns.TypeToString[qtype]
	}
	m.queries.WithLabelValues(typ, dns.RcodeToString[rcode]).Inc()
	m.duration.WithLabelValues(zone).Observe(time.Since(start).Seconds())
}

func (m *Metrics) forward(result string) {
	if m != nil {
		m.forwards.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) setRecords(services, records int) {
	if m != nil {
		m.services.Set(float64(services))
		m.records.Set(float64(records))
	}
}
