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
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"k8s.io/client-go/tools/leaderelection"
)

func newTestHealth() *Health {
	health := NewHealth()
	health.AddReadyz(
		Check{Name: "informers-synced", Fn: func(*http.Request) error { return nil }},
		Check{Name: "leader", Fn: func(*http.Request) error { return errors.New("not leading yet") }},
	)
	return health
}

func get(t *testing.T, handler http.Handler, target string) (int, string) {
	t.Helper()
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, target, nil))
	body, err := io.ReadAll(recorder.Result().Body)
	if err != nil {
		t.Fatal(err)
	}
	return recorder.Code, string(body)
}

func TestHealthEndpoints(t *testing.T) {
	tests := []struct {
		target      string
		wantStatus  int
		wantBody    []string
		notWantBody []string
	}{
		{target: "/healthz", wantStatus: 200, wantBody: []string{"ok"}, notWantBody: []string{"[+]"}},
		{target: "/healthz?verbose", wantStatus: 200, wantBody: []string{"[+]ping ok", "healthz check passed"}},
		{target: "/healthz/ping", wantStatus: 200, wantBody: []string{"ok"}},
		{target: "/readyz", wantStatus: 500, wantBody: []string{
			"[+]ping ok", "[+]informers-synced ok", "[-]leader failed: not leading yet", "readyz check failed",
		}},
		{target: "/readyz?verbose", wantStatus: 500, wantBody: []string{"[-]leader failed: not leading yet"}},
		{target: "/readyz?exclude=leader", wantStatus: 200, wantBody: []string{"ok"}},
		{target: "/readyz?exclude=leader&verbose", wantStatus: 200, wantBody: []string{
			"[+]leader excluded: ok", "[+]informers-synced ok", "readyz check passed",
		}},
		{target: "/readyz/informers-synced", wantStatus: 200, wantBody: []string{"ok"}},
		{target: "/readyz/leader", wantStatus: 500, wantBody: []string{"leader failed: not leading yet"}},
		{target: "/readyz/unknown", wantStatus: 404},
		{target: "/healthz/leader", wantStatus: 404},
		{target: "/livez", wantStatus: 404},
	}
	handler := newTestHealth().Handler()
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			status, body := get(t, handler, tt.target)

			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d; body:\n%s", status, tt.wantStatus, body)
			}
			for _, want := range tt.wantBody {
				if !strings.Contains(body, want) {
					t.Errorf("body lacks %q:\n%s", want, body)
				}
			}
			for _, notWant := range tt.notWantBody {
				if strings.Contains(body, notWant) {
					t.Errorf("body has %q:\n%s", notWant, body)
				}
			}
		})
	}
}

func TestHealthChecksAddedAfterHandlerAreServed(t *testing.T) {
	health := NewHealth()
	handler := health.Handler()

	health.AddHealthz(Check{Name: "deadlock", Fn: func(*http.Request) error { return errors.New("worker stuck") }})

	if status, body := get(t, handler, "/healthz"); status != 500 || !strings.Contains(body, "[-]deadlock failed: worker stuck") {
		t.Errorf("GET /healthz = %d:\n%s", status, body)
	}
	if status, _ := get(t, handler, "/readyz"); status != 200 {
		t.Errorf("GET /readyz = %d, want 200 (the check is a liveness check only)", status)
	}
}

func TestHealthRejectsBadChecks(t *testing.T) {
	ok := func(*http.Request) error { return nil }
	tests := []struct {
		name  string
		check Check
	}{
		{name: "duplicate of ping", check: Check{Name: "ping", Fn: ok}},
		{name: "empty name", check: Check{Name: "", Fn: ok}},
		{name: "slash in name", check: Check{Name: "a/b", Fn: ok}},
		{name: "nil func", check: Check{Name: "nil"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("AddReadyz accepted the check, want a panic")
				}
			}()
			NewHealth().AddReadyz(tt.check)
		})
	}
}

func TestCheckFromLeaderElectionAdaptor(t *testing.T) {
	check := CheckFrom(leaderelection.NewLeaderHealthzAdaptor(0))

	if check.Name != "leaderElection" {
		t.Errorf("name = %q", check.Name)
	}
	if err := check.Fn(httptest.NewRequest(http.MethodGet, "/healthz", nil)); err != nil {
		t.Errorf("adaptor without an elector failed: %v", err)
	}
}
