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

package kubeletapi

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Operations, the values of the metrics' operation label.
const (
	opLogs        = "logs"
	opExec        = "exec"
	opAttach      = "attach"
	opPortForward = "portforward"
	opStats       = "stats"
	opHealthz     = "healthz"
)

// Metrics are the kubelet API's Prometheus metrics. One set serves a
// process: the in-process syncers of a manager share it.
type Metrics struct {
	requests       *prometheus.CounterVec
	physicalErrors *prometheus.CounterVec
	openStreams    *prometheus.GaugeVec
	bytes          *prometheus.CounterVec
	streamsClosed  *prometheus.CounterVec
	// Of the serving certificate issued through CertificateSigningRequests.
	certificateRenewFailures prometheus.Counter
	certificateRotations     prometheus.Histogram
}

// NewMetrics registers the metrics with reg, or reuses those a syncer of
// the same process registered before.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubeocean_kubelet_api_requests_total",
			Help: "Requests to the virtual nodes' kubelet API, by operation and HTTP status code.",
		}, []string{"operation", "code"}),
		physicalErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubeocean_kubelet_api_physical_errors_total",
			Help: "Calls to the physical cluster made for the kubelet API that failed, by operation.",
		}, []string{"operation"}),
		openStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kubeocean_kubelet_api_open_streams",
			Help: "Kubelet API requests being served (log follows, exec, attach and port-forward sessions), by operation.",
		}, []string{"operation"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubeocean_kubelet_api_bytes_total",
			Help: "Bytes served by the kubelet API (both directions for exec, attach and port-forward), by operation.",
		}, []string{"operation"}),
		streamsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kubeocean_kubelet_api_streams_closed_total",
			Help: "Exec, attach and port-forward streams the kubelet API closed itself, by reason: idle (no byte either way for the idle timeout) or listener-stopped (the virtual node went, its port moved, or the syncer stopped).",
		}, []string{"reason"}),
		certificateRenewFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "kubeocean_kubelet_api_serving_certificate_renewal_failures_total",
			Help: "Failed attempts to get the kubelet API's serving certificate through a CertificateSigningRequest.",
		}),
		certificateRotations: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "kubeocean_kubelet_api_serving_certificate_age_at_rotation_seconds",
			Help: "Age of the kubelet API's serving certificate when a renewed one replaced it.",
			// 10 minutes to 1 year.
			Buckets: prometheus.ExponentialBuckets(600, 4, 10),
		}),
	}
	var err error
	m.requests, err = register(reg, m.requests)
	if err == nil {
		m.physicalErrors, err = register(reg, m.physicalErrors)
	}
	if err == nil {
		m.openStreams, err = register(reg, m.openStreams)
	}
	if err == nil {
		m.bytes, err = register(reg, m.bytes)
	}
	if err == nil {
		m.streamsClosed, err = register(reg, m.streamsClosed)
	}
	if err == nil {
		m.certificateRenewFailures, err = register(reg, m.certificateRenewFailures)
	}
	if err == nil {
		m.certificateRotations, err = register(reg, m.certificateRotations)
	}
	return m, err
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
