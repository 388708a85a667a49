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
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestDescribe(t *testing.T) {
	tests := []struct {
		method, path, query string
		verb, resource      string
	}{
		{"GET", "/api/v1/namespaces/ns/pods", "", "list", "pods"},
		{"GET", "/api/v1/namespaces/ns/pods", "watch=true", "watch", "pods"},
		{"GET", "/api/v1/namespaces/ns/pods/web", "", "get", "pods"},
		{"PUT", "/api/v1/namespaces/ns/pods/web/status", "", "update", "pods/status"},
		{"PATCH", "/api/v1/namespaces/ns/pods/web", "", "patch", "pods"},
		{"POST", "/api/v1/namespaces/ns/serviceaccounts/default/token", "", "create", "serviceaccounts/token"},
		{"DELETE", "/api/v1/nodes/vnode-a", "", "delete", "nodes"},
		{"PUT", "/api/v1/nodes/vnode-a/status", "", "update", "nodes/status"},
		{"GET", "/api/v1/namespaces", "", "list", "namespaces"},
		{"GET", "/api/v1/namespaces/team", "", "get", "namespaces"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/vnode-a", "", "update", "leases"},
		{"PUT", "/apis/kubeocean.io/v1alpha1/resourceleasingpolicies/p/status", "", "update", "resourceleasingpolicies/status"},
		{"GET", "/version", "", "get", "nonresource"},
	}
	for _, tt := range tests {
		req := &http.Request{Method: tt.method, URL: &url.URL{Path: tt.path, RawQuery: tt.query}}
		verb, resource := describe(req)
		if verb != tt.verb || resource != tt.resource {
			t.Errorf("%s %s?%s = %s %s, want %s %s", tt.method, tt.path, tt.query, verb, resource, tt.verb, tt.resource)
		}
	}
}

// Requests are counted by response code, transport errors as "error", and
// timed except watches.
func TestRequestCounterCodesAndLatency(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/namespaces/ns/pods/missing" {
			http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web"}}`))
	}))
	registry := prometheus.NewRegistry()
	counter := NewRequestCounter(registry)
	config := &rest.Config{Host: server.URL}
	counter.Wrap(config, "physical")
	kube := kubernetes.NewForConfigOrDie(config)
	ctx := context.Background()
	_, _ = kube.CoreV1().Pods("ns").Get(ctx, "web", metav1.GetOptions{})
	_, _ = kube.CoreV1().Pods("ns").Get(ctx, "web", metav1.GetOptions{})
	_, _ = kube.CoreV1().Pods("ns").Get(ctx, "missing", metav1.GetOptions{})
	server.Close()
	_, _ = kube.CoreV1().Pods("ns").Get(ctx, "web", metav1.GetOptions{})

	want := `
# HELP kubeocean_client_requests_total API requests sent, by cluster (virtual or physical), verb, resource[/subresource] and HTTP status code ("error" when no response came).
# TYPE kubeocean_client_requests_total counter
kubeocean_client_requests_total{cluster="physical",code="200",resource="pods",verb="get"} 2
kubeocean_client_requests_total{cluster="physical",code="404",resource="pods",verb="get"} 1
kubeocean_client_requests_total{cluster="physical",code="error",resource="pods",verb="get"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "kubeocean_client_requests_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(counter.duration); n != 1 {
		t.Fatalf("%d latency series, want 1 (physical get pods)", n)
	}
	families, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "kubeocean_client_request_duration_seconds" {
			if got := f.GetMetric()[0].GetHistogram().GetSampleCount(); got != 4 {
				t.Fatalf("%d requests timed, want 4", got)
			}
		}
	}
}
