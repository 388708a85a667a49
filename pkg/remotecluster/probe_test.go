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

package remotecluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
)

func TestProbeWithFakeClientset(t *testing.T) {
	refused := errors.New("connection refused")
	tests := []struct {
		name    string
		failing bool
	}{
		{name: "server answers"},
		{name: "server fails", failing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset()
			client.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.36.3"}
			if tt.failing {
				client.PrependReactor("get", "version", func(clienttesting.Action) (bool, runtime.Object, error) {
					return true, nil, refused
				})
			}
			_, ctx := ktesting.NewTestContext(t)

			err := Probe(ctx, client)

			if tt.failing != (err != nil) {
				t.Fatalf("Probe = %v, want failure %v", err, tt.failing)
			}
			if tt.failing && !errors.Is(err, refused) {
				t.Errorf("error %v does not wrap the cause", err)
			}
		})
	}
}

func TestProbeAgainstHTTPServer(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"major":"1","minor":"36","gitVersion":"v1.36.3"}`))
	}))
	defer server.Close()
	_, ctx := ktesting.NewTestContext(t)

	if err := Probe(ctx, newKubeClient(t, server.URL)); err != nil {
		t.Fatalf("Probe: %v", err)
	}
}

func TestProbeHonoursContextDeadline(t *testing.T) {
	release := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer server.Close()
	defer close(release)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()

	start := time.Now()
	err := Probe(ctx, newKubeClient(t, server.URL))

	if err == nil {
		t.Fatal("Probe succeeded against a server that never answers")
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Probe took %v, the deadline was 100ms", elapsed)
	}
}

func newKubeClient(t *testing.T, host string) kubernetes.Interface {
	t.Helper()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: host})
	if err != nil {
		t.Fatal(err)
	}
	return kube
}
