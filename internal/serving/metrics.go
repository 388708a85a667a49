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

package serving

import (
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a fresh registry with the Go runtime and process
// collectors. A registry of our own (rather than the global default) keeps
// tests isolated and shows exactly what a binary exports.
func NewRegistry() *prometheus.Registry {
	registry := prometheus.NewRegistry()
	registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return registry
}

// MetricsHandler serves what gatherer collects at /metrics.
func MetricsHandler(gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		// A broken collector should not hide every other metric.
		ErrorHandling: promhttp.ContinueOnError,
	}))
	return mux
}

// RegisterMetrics exports what a from NewDelegatingAuth did with bearer
// tokens: kubeocean_auth_rejected_token_cache_requests_total by result
// (hit: answered as rejected without a TokenReview; miss: passed on to the
// cache of accepted tokens or a TokenReview),
// kubeocean_auth_token_reviews_total by result (authenticated, rejected,
// error), and kubeocean_auth_rejected_token_cache_entries. Registering a
// second time with the same registry is a no-op; an Auth of other parts
// has nothing to export.
func (a *Auth) RegisterMetrics(reg prometheus.Registerer) error {
	if a.tokens == nil {
		return nil
	}
	err := reg.Register(&authCollector{auth: a})
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		// The process's shared Auth, registered by another server, or an
		// Auth of its own beside it: the first one's figures are exported.
		return nil
	}
	return err
}

var (
	rejectedTokenCacheDesc = prometheus.NewDesc("kubeocean_auth_rejected_token_cache_requests_total",
		"Bearer tokens looked up in the cache of tokens the apiserver rejected lately, by result: hit (refused without a TokenReview) or miss.",
		[]string{"result"}, nil)
	tokenReviewsDesc = prometheus.NewDesc("kubeocean_auth_token_reviews_total",
		"TokenReviews asked of the apiserver for bearer tokens, by result: authenticated, rejected, or error (no answer).",
		[]string{"result"}, nil)
	rejectedTokenEntriesDesc = prometheus.NewDesc("kubeocean_auth_rejected_token_cache_entries",
		"Rejected bearer tokens remembered (bounded; their hashes only).", nil, nil)
)

// authCollector reads an Auth's counts at each scrape, so that counting
// costs an atomic add on the request path and nothing else.
type authCollector struct{ auth *Auth }

func (c *authCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- rejectedTokenCacheDesc
	ch <- tokenReviewsDesc
	ch <- rejectedTokenEntriesDesc
}

func (c *authCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.auth.tokens
	counter := func(desc *prometheus.Desc, v int64, result string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), result)
	}
	counter(rejectedTokenCacheDesc, n.rejectedHits.Load(), "hit")
	counter(rejectedTokenCacheDesc, n.rejectedMisses.Load(), "miss")
	counter(tokenReviewsDesc, n.reviewsAuthenticated.Load(), "authenticated")
	counter(tokenReviewsDesc, n.reviewsRejected.Load(), "rejected")
	counter(tokenReviewsDesc, n.reviewErrors.Load(), "error")
	ch <- prometheus.MustNewConstMetric(rejectedTokenEntriesDesc, prometheus.GaugeValue, float64(c.auth.rejected.len()))
}
