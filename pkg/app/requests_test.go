package app

import (
	"net/http"
	"net/url"
	"testing"
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
