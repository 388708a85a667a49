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
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"k8s.io/klog/v2"
)

// Check is one named health or readiness check. Fn returns nil when healthy.
type Check struct {
	Name string
	Fn   func(*http.Request) error
}

// NamedChecker is anything that carries its own name and check, such as
// client-go's leader election HealthzAdaptor.
type NamedChecker interface {
	Name() string
	Check(*http.Request) error
}

// CheckFrom adapts a NamedChecker to a Check.
func CheckFrom(checker NamedChecker) Check {
	return Check{Name: checker.Name(), Fn: checker.Check}
}

// PingCheck always succeeds: it shows the process still serves HTTP.
func PingCheck() Check {
	return Check{Name: "ping", Fn: func(*http.Request) error { return nil }}
}

// Health holds the liveness (/healthz) and readiness (/readyz) checks. Checks
// can be added after the server has started, so the probe server can come up
// before the controllers whose state the readiness checks report.
type Health struct {
	mu      sync.RWMutex
	healthz []Check
	readyz  []Check
}

// NewHealth returns a Health with the ping check on both endpoints, so an
// endpoint is never empty.
func NewHealth() *Health {
	return &Health{healthz: []Check{PingCheck()}, readyz: []Check{PingCheck()}}
}

// AddHealthz adds liveness checks. It panics on an empty or duplicate name,
// like http.ServeMux does for patterns, since that is a wiring mistake.
func (h *Health) AddHealthz(checks ...Check) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.healthz = appendChecks("healthz", h.healthz, checks)
}

// AddReadyz adds readiness checks, with the same rules as AddHealthz.
func (h *Health) AddReadyz(checks ...Check) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.readyz = appendChecks("readyz", h.readyz, checks)
}

func appendChecks(endpoint string, existing, added []Check) []Check {
	for _, check := range added {
		if check.Name == "" || strings.Contains(check.Name, "/") || check.Fn == nil {
			panic(fmt.Sprintf("serving: invalid %s check %q", endpoint, check.Name))
		}
		if findCheck(existing, check.Name) != nil {
			panic(fmt.Sprintf("serving: duplicate %s check %q", endpoint, check.Name))
		}
		existing = append(existing, check)
	}
	return existing
}

func findCheck(checks []Check, name string) *Check {
	i := slices.IndexFunc(checks, func(c Check) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &checks[i]
}

// Handler serves /healthz and /readyz (all checks, "?verbose" to list them,
// "?exclude=name" to skip some) and /healthz/<name>, /readyz/<name> (one check).
func (h *Health) Handler() http.Handler {
	mux := http.NewServeMux()
	healthz, readyz := h.checks(&h.healthz), h.checks(&h.readyz)
	mux.Handle("/healthz", allChecksHandler("healthz", healthz))
	mux.Handle("/healthz/{name}", singleCheckHandler(healthz))
	mux.Handle("/readyz", allChecksHandler("readyz", readyz))
	mux.Handle("/readyz/{name}", singleCheckHandler(readyz))
	return mux
}

// checks returns a snapshot accessor so a request never holds the lock while
// running the checks.
func (h *Health) checks(list *[]Check) func() []Check {
	return func() []Check {
		h.mu.RLock()
		defer h.mu.RUnlock()
		return slices.Clone(*list)
	}
}

func allChecksHandler(endpoint string, checks func() []Check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		query := r.URL.Query()
		excluded := query["exclude"]
		var report strings.Builder
		var failed []string
		for _, check := range checks() {
			if slices.Contains(excluded, check.Name) {
				fmt.Fprintf(&report, "[+]%s excluded: ok\n", check.Name)
				continue
			}
			if err := check.Fn(r); err != nil {
				fmt.Fprintf(&report, "[-]%s failed: %v\n", check.Name, err)
				failed = append(failed, check.Name)
				continue
			}
			fmt.Fprintf(&report, "[+]%s ok\n", check.Name)
		}
		if len(failed) > 0 {
			klog.FromContext(r.Context()).Info("Health check failed", "endpoint", endpoint, "failedChecks", failed)
			fmt.Fprintf(&report, "%s check failed\n", endpoint)
			writeText(w, http.StatusInternalServerError, report.String())
			return
		}
		if !query.Has("verbose") {
			writeText(w, http.StatusOK, "ok")
			return
		}
		fmt.Fprintf(&report, "%s check passed\n", endpoint)
		writeText(w, http.StatusOK, report.String())
	}
}

func singleCheckHandler(checks func() []Check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		check := findCheck(checks(), r.PathValue("name"))
		if check == nil {
			http.NotFound(w, r)
			return
		}
		if err := check.Fn(r); err != nil {
			writeText(w, http.StatusInternalServerError, fmt.Sprintf("internal server error: %s failed: %v\n", check.Name, err))
			return
		}
		writeText(w, http.StatusOK, "ok")
	}
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = fmt.Fprint(w, body)
}
