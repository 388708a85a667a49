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

package clusterhealth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// freeAddress returns a loopback address nothing listens on yet.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// serveLater starts answering on addr after delay.
func serveLater(t *testing.T, addr string, delay time.Duration, handler http.Handler) {
	t.Helper()
	server := &http.Server{Handler: handler, ReadHeaderTimeout: time.Second}
	listening := make(chan net.Listener, 1)
	go func() {
		time.Sleep(delay)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("listening on %s: %v", addr, err)
			close(listening)
			return
		}
		listening <- l
		_ = server.Serve(l)
	}()
	t.Cleanup(func() {
		if l, ok := <-listening; ok {
			_ = server.Close()
			_ = l.Close()
		}
	})
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }

func httpClient(t *testing.T, config *rest.Config) *http.Client {
	t.Helper()
	client, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// A list or watch of an apiserver that is down waits for it and succeeds
// once it answers, instead of failing into the reflector's backoff.
func TestWaitForAnswerWaitsForTheAPIServer(t *testing.T) {
	addr := freeAddress(t)
	serveLater(t, addr, 1500*time.Millisecond, http.HandlerFunc(ok))
	client := httpClient(t, WaitForAnswer(&rest.Config{Host: "http://" + addr}))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/pods?watch=true", nil)
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET through WaitForAnswer: %v, want it to wait until the server answers", err)
	}
	_ = resp.Body.Close()
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("answered after %v, before the server listened", waited)
	}
}

// Writes fail at once: only reads are safe to repeat, and controllers
// must see their errors.
func TestWaitForAnswerFailsWritesAtOnce(t *testing.T) {
	addr := freeAddress(t)
	client := httpClient(t, WaitForAnswer(&rest.Config{Host: "http://" + addr}))
	start := time.Now()
	resp, err := client.Post("http://"+addr+"/api/v1/namespaces/a/pods", "application/json", strings.NewReader("{}"))
	if err == nil {
		_ = resp.Body.Close()
		t.Fatal("POST to a closed port succeeded")
	}
	if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
		t.Errorf("POST failed after %v, want at once", elapsed)
	}
}

// A waiting request ends with its context.
func TestWaitForAnswerEndsWithTheContext(t *testing.T) {
	addr := freeAddress(t)
	client := httpClient(t, WaitForAnswer(&rest.Config{Host: "http://" + addr}))
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/pods", nil)
	if resp, err := client.Do(req); err == nil {
		_ = resp.Body.Close()
		t.Fatal("GET to a closed port succeeded")
	}
	if ctx.Err() == nil {
		t.Error("the GET returned before its context ended")
	}
}

func TestProberFollowsReadyz(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		if !ready.Load() {
			http.Error(w, "etcd is not ready", http.StatusInternalServerError)
			return
		}
		ok(w, r)
	}))
	defer server.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(time.Now())
	var changes []bool
	p := NewProber(ProberOptions{Name: "physical", Client: kube.Discovery().RESTClient(), Period: 5 * time.Second, Clock: clock,
		OnChange: func(answers bool) { changes = append(changes, answers) }})
	ctx := context.Background()

	step := func(want bool, what string) {
		t.Helper()
		clock.Step(5 * time.Second)
		p.probe(ctx)
		if p.Answers() != want {
			t.Fatalf("%s: Answers() = %v, want %v", what, p.Answers(), want)
		}
	}
	step(true, "ready")
	ready.Store(false)
	step(true, "one failed probe is not an outage")
	step(false, "two periods without an answer")
	step(false, "still down")
	ready.Store(true)
	step(true, "answers again")
	if len(changes) != 2 || changes[0] || !changes[1] {
		t.Errorf("OnChange saw %v, want [false true]", changes)
	}
}

// LastAnswer dates an outage: it stays at the last probe that was answered
// while the apiserver is silent, and moves on once it answers again.
func TestLastAnswerDatesTheOutage(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ready.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		ok(w, r)
	}))
	defer server.Close()
	kube, err := kubernetes.NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(time.Now())
	p := NewProber(ProberOptions{Client: kube.Discovery().RESTClient(), Period: 5 * time.Second, Clock: clock})
	ctx := context.Background()
	clock.Step(5 * time.Second)
	p.probe(ctx)
	lastSeen := clock.Now()
	if got := p.LastAnswer(); !got.Equal(lastSeen) {
		t.Fatalf("LastAnswer() = %v after an answered probe, want %v", got, lastSeen)
	}
	ready.Store(false)
	for range 3 {
		clock.Step(5 * time.Second)
		p.probe(ctx)
	}
	if got := p.LastAnswer(); p.Answers() || !got.Equal(lastSeen) {
		t.Fatalf("during the outage: Answers() = %v, LastAnswer() = %v; want false, %v", p.Answers(), got, lastSeen)
	}
	ready.Store(true)
	clock.Step(5 * time.Second)
	p.probe(ctx)
	if got := p.LastAnswer(); !got.Equal(clock.Now()) {
		t.Errorf("LastAnswer() = %v once it answers again, want %v", got, clock.Now())
	}
}
