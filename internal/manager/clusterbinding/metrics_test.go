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

package clusterbinding

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

func TestMetrics(t *testing.T) {
	f := newFixture(t, nil)
	registry := prometheus.NewRegistry()
	var err error
	f.c.metrics, err = newMetrics(registry, f.c.bindings, f.runner)
	if err != nil {
		t.Fatal(err)
	}
	ready, failed, fresh := bound(newBinding("ready", "r")), bound(newBinding("failed", "f")), newBinding("fresh", "x")
	ready.Status.Phase, failed.Status.Phase = kubeoceanv1alpha1.ClusterBindingReady, kubeoceanv1alpha1.ClusterBindingFailed
	for _, b := range []*kubeoceanv1alpha1.ClusterBinding{ready, failed, fresh} {
		fixtures.MustAdd(f.t, f.bindings, b)
	}
	f.runner.running["ready"] = true
	f.c.metrics.observeCheck(&connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonUnreachable}, 0)
	f.c.metrics.observeCheck(nil, 0)

	want := `
# HELP kubeocean_manager_cluster_bindings ClusterBindings by phase.
# TYPE kubeocean_manager_cluster_bindings gauge
kubeocean_manager_cluster_bindings{phase="Failed"} 1
kubeocean_manager_cluster_bindings{phase="Pending"} 0
kubeocean_manager_cluster_bindings{phase="Ready"} 1
kubeocean_manager_cluster_bindings{phase="Unknown"} 1
# HELP kubeocean_manager_connectivity_failures_total Failed checks of physical clusters, by reason.
# TYPE kubeocean_manager_connectivity_failures_total counter
kubeocean_manager_connectivity_failures_total{reason="Unreachable"} 1
# HELP kubeocean_manager_syncers_running Syncers that run: in-process syncers started and not stopped, or syncer Deployments with an available replica.
# TYPE kubeocean_manager_syncers_running gauge
kubeocean_manager_syncers_running 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want),
		"kubeocean_manager_cluster_bindings", "kubeocean_manager_connectivity_failures_total", "kubeocean_manager_syncers_running"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(f.c.metrics.checks); n != 2 {
		t.Errorf("%d check duration series, want success and failure", n)
	}
}
