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
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
)

// metrics are the manager's own metrics, beside the framework's reconcile
// counts and durations (kubeocean_controller_*{controller="manager-clusterbinding"}).
// A nil *metrics records nothing.
type metrics struct {
	checks   *prometheus.HistogramVec
	failures *prometheus.CounterVec
}

// phaseUnknown labels bindings without a phase yet.
const phaseUnknown = "Unknown"

func newMetrics(reg prometheus.Registerer, bindings kubeoceanlisters.ClusterBindingLister, runner syncers.Runner) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		checks: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kubeocean", Subsystem: "manager", Name: "connectivity_check_duration_seconds",
			Help:    "Time one check of a physical cluster takes (read the kubeconfig, reach the API server, review permissions), by result.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 10),
		}, []string{"result"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubeocean", Subsystem: "manager", Name: "connectivity_failures_total",
			Help: "Failed checks of physical clusters, by reason.",
		}, []string{"reason"}),
	}
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "kubeocean", Subsystem: "manager", Name: "syncers_running",
		Help: "Syncers that run: in-process syncers started and not stopped, or syncer Deployments with an available replica.",
	}, func() float64 { return float64(runner.Running()) })
	phases := &phaseCollector{bindings: bindings, desc: prometheus.NewDesc(
		"kubeocean_manager_cluster_bindings", "ClusterBindings by phase.", []string{"phase"}, nil)}
	var errs []error
	for _, c := range []prometheus.Collector{m.checks, m.failures, running, phases} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

func (m *metrics) observeCheck(failure *connectivity.Failure, took time.Duration) {
	if m == nil {
		return
	}
	result := "success"
	if failure != nil {
		result = "failure"
		m.failures.WithLabelValues(failure.Reason).Inc()
	}
	m.checks.WithLabelValues(result).Observe(took.Seconds())
}

// phaseCollector counts the bindings of the informer cache by phase when
// scraped, so the figure is never out of step with the cache.
type phaseCollector struct {
	bindings kubeoceanlisters.ClusterBindingLister
	desc     *prometheus.Desc
}

func (p *phaseCollector) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *phaseCollector) Collect(ch chan<- prometheus.Metric) {
	counts := map[string]int{
		string(kubeoceanv1alpha1.ClusterBindingPending): 0,
		string(kubeoceanv1alpha1.ClusterBindingReady):   0,
		string(kubeoceanv1alpha1.ClusterBindingFailed):  0,
		phaseUnknown: 0,
	}
	bindings, err := p.bindings.List(labels.Everything())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(p.desc, err)
		return
	}
	for _, b := range bindings {
		phase := string(b.Status.Phase)
		if phase == "" {
			phase = phaseUnknown
		}
		counts[phase]++
	}
	for phase, n := range counts {
		ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n), phase)
	}
}
