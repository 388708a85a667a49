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

package app

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

// RequestCounter counts the API requests a process makes, by cluster,
// verb, resource and response code, as kubeocean_client_requests_total, and
// times them (all but watches) in kubeocean_client_request_duration_seconds:
// the write amplification of a controller is read from it directly, and an
// apiserver that refuses or slows down shows by cluster.
type RequestCounter struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewRequestCounter creates the metrics and registers them with reg.
func NewRequestCounter(reg prometheus.Registerer) *RequestCounter {
	c := &RequestCounter{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubeocean", Subsystem: "client", Name: "requests_total",
			Help: "API requests sent, by cluster (virtual or physical), verb, resource[/subresource] and HTTP status code (\"error\" when no response came).",
		}, []string{"cluster", "verb", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kubeocean", Subsystem: "client", Name: "request_duration_seconds",
			Help:    "Time from sending an API request to its response headers, by cluster, verb and resource; watches are not timed.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"cluster", "verb", "resource"}),
	}
	reg.MustRegister(c.requests, c.duration)
	return c
}

// Wrap makes every client built from config count and time its requests
// under cluster.
func (c *RequestCounter) Wrap(config *rest.Config, cluster string) {
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			verb, resource := describe(req)
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			code := "error"
			if err == nil {
				code = strconv.Itoa(resp.StatusCode)
			}
			c.requests.WithLabelValues(cluster, verb, resource, code).Inc()
			if verb != "watch" {
				c.duration.WithLabelValues(cluster, verb, resource).Observe(time.Since(start).Seconds())
			}
			return resp, err
		})
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// describe names a request the way the API server's metrics do: the verb
// (get, list, watch, create, update, patch, delete) and the resource with
// its subresource, e.g. pods/status.
func describe(req *http.Request) (verb, resource string) {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/... or /apis/<group>/<version>/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return strings.ToLower(req.Method), "nonresource"
	}
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	named := len(parts) >= 2
	if len(parts) > 0 {
		resource = parts[0]
	}
	if len(parts) >= 3 {
		resource += "/" + parts[2]
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1":
			verb = "watch"
		case named:
			verb = "get"
		default:
			verb = "list"
		}
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	default:
		verb = strings.ToLower(req.Method)
	}
	return verb, resource
}
