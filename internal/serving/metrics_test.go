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
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsHandlerExposesRegistry(t *testing.T) {
	registry := NewRegistry()
	reconciles := prometheus.NewCounter(prometheus.CounterOpts{Name: "kubeocean_test_reconciles_total", Help: "Test counter."})
	registry.MustRegister(reconciles)
	reconciles.Add(3)

	status, body := get(t, MetricsHandler(registry), "/metrics")

	if status != 200 {
		t.Fatalf("status = %d", status)
	}
	for _, want := range []string{"kubeocean_test_reconciles_total 3", "go_goroutines", "process_start_time_seconds"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if status, _ := get(t, MetricsHandler(registry), "/healthz"); status != 404 {
		t.Errorf("metrics server answers /healthz with %d, want 404", status)
	}
}
