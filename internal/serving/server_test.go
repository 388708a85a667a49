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
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
)

func startTestServer(t *testing.T, h http.Handler) (*Server, context.CancelFunc) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	server, err := Start(ctx, "127.0.0.1:0", h)
	if err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = server.Wait()
	})
	return server, cancel
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestServeUntilCancelled(t *testing.T) {
	server, cancel := startTestServer(t, NewHealth().Handler())

	if status, body := httpGet(t, "http://"+server.Addr()+"/healthz"); status != 200 || body != "ok" {
		t.Fatalf("GET /healthz = %d %q", status, body)
	}
	cancel()

	if err := server.Wait(); err != nil {
		t.Errorf("Wait after cancel = %v, want nil", err)
	}
	if conn, err := net.Dial("tcp", server.Addr()); err == nil {
		conn.Close()
		t.Error("server still accepts connections after shutdown")
	}
}

func TestServeFinishesInFlightRequestsOnShutdown(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "finished")
	})
	server, cancel := startTestServer(t, slow)
	type result struct {
		status int
		body   string
	}
	results := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + server.Addr() + "/")
		if err != nil {
			results <- result{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		results <- result{resp.StatusCode, string(body)}
	}()
	<-entered

	cancel()
	select {
	case <-server.Done():
		t.Fatal("server stopped while a request was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)

	if got := <-results; got.status != 200 || got.body != "finished" {
		t.Errorf("in-flight request got %d %q, want 200 \"finished\"", got.status, got.body)
	}
	if err := server.Wait(); err != nil {
		t.Errorf("Wait = %v, want nil", err)
	}
}

func TestServeReturnsListenErrorAtOnce(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, ctx := ktesting.NewTestContext(t)

	errc := make(chan error, 1)
	go func() { errc <- Serve(ctx, taken.Addr().String(), NewHealth().Handler()) }()

	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) {
			t.Errorf("Serve = %v, want a listen error naming the address", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return the listen error")
	}
}

func TestServeDisabledAddress(t *testing.T) {
	for _, addr := range []string{"", "0"} {
		t.Run("addr="+addr, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t) // never cancelled: Serve must not wait for it

			if err := Serve(ctx, addr, NewHealth().Handler()); err != nil {
				t.Errorf("Serve(%q) = %v, want nil", addr, err)
			}
			server, err := Start(ctx, addr, nil)
			if err != nil || server.Addr() != "" {
				t.Errorf("Start(%q) = %+v, %v", addr, server, err)
			}
		})
	}
}

func TestServeMetricsAndHealthTogether(t *testing.T) {
	metrics, _ := startTestServer(t, MetricsHandler(NewRegistry()))
	health, _ := startTestServer(t, NewHealth().Handler())

	if status, body := httpGet(t, "http://"+metrics.Addr()+"/metrics"); status != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("GET /metrics = %d", status)
	}
	if status, _ := httpGet(t, "http://"+health.Addr()+"/readyz/ping"); status != 200 {
		t.Errorf("GET /readyz/ping = %d", status)
	}
}
