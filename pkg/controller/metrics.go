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

package controller

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// Metrics are the Prometheus metrics of every controller in a process:
// reconcile counts, errors, durations and panics per controller, and the
// client-go workqueue metrics per queue. Create one per registry.
type Metrics struct {
	reconciles *prometheus.CounterVec
	errors     *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	panics     *prometheus.CounterVec
	queue      *queueMetricsProvider
}

// Reconcile outcomes, the "result" label of kubeocean_controller_reconcile_total.
const (
	resultSuccess  = "success"
	resultRequeue  = "requeue_after"
	resultError    = "error"
	resultTerminal = "terminal_error"
)

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubeocean", Subsystem: "controller", Name: "reconcile_total",
			Help: "Reconciles per controller and result (success, requeue_after, error, terminal_error).",
		}, []string{"controller", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubeocean", Subsystem: "controller", Name: "reconcile_errors_total",
			Help: "Reconciles that returned an error, per controller.",
		}, []string{"controller"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "kubeocean", Subsystem: "controller", Name: "reconcile_duration_seconds",
			Help:    "Time spent in one reconcile, per controller.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"controller"}),
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "kubeocean", Subsystem: "controller", Name: "reconcile_panics_total",
			Help: "Panics recovered in reconcile, per controller.",
		}, []string{"controller"}),
		queue: newQueueMetricsProvider(),
	}
	reg.MustRegister(m.reconciles, m.errors, m.duration, m.panics)
	m.queue.register(reg)
	return m
}

func (m *Metrics) queueProvider() workqueue.MetricsProvider { return m.queue }

// reconcileMetrics are one controller's children of Metrics; a nil value
// records nothing, so controllers built without metrics need no checks.
type reconcileMetrics struct {
	success, requeue, failed, terminal prometheus.Counter
	errors, panics                     prometheus.Counter
	duration                           prometheus.Observer
}

func (m *Metrics) forController(name string) *reconcileMetrics {
	if m == nil {
		return nil
	}
	return &reconcileMetrics{
		success:  m.reconciles.WithLabelValues(name, resultSuccess),
		requeue:  m.reconciles.WithLabelValues(name, resultRequeue),
		failed:   m.reconciles.WithLabelValues(name, resultError),
		terminal: m.reconciles.WithLabelValues(name, resultTerminal),
		errors:   m.errors.WithLabelValues(name),
		panics:   m.panics.WithLabelValues(name),
		duration: m.duration.WithLabelValues(name),
	}
}

func (r *reconcileMetrics) observe(start time.Time, result Result, err error) {
	if r == nil {
		return
	}
	r.duration.Observe(time.Since(start).Seconds())
	var terminal *terminalError
	switch {
	case errors.As(err, &terminal):
		r.terminal.Inc()
		r.errors.Inc()
	case err != nil:
		r.failed.Inc()
		r.errors.Inc()
	case result.RequeueAfter > 0:
		r.requeue.Inc()
	default:
		r.success.Inc()
	}
}

func (r *reconcileMetrics) panicked() {
	if r != nil {
		r.panics.Inc()
	}
}

// queueMetricsProvider feeds client-go's workqueue metrics, labelled by
// queue name, into Prometheus.
type queueMetricsProvider struct {
	depth, unfinished, longestRunning *prometheus.GaugeVec
	adds, retries                     *prometheus.CounterVec
	latency, workDuration             *prometheus.HistogramVec
}

func newQueueMetricsProvider() *queueMetricsProvider {
	const namespace, subsystem = "kubeocean", "workqueue"
	byName := []string{"name"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, byName)
	}
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help}, byName)
	}
	histogram := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: subsystem, Name: name, Help: help,
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 12)}, byName)
	}
	return &queueMetricsProvider{
		depth:          gauge("depth", "Current depth of the workqueue."),
		unfinished:     gauge("unfinished_work_seconds", "Seconds of work in progress not yet observed by work_duration."),
		longestRunning: gauge("longest_running_processor_seconds", "Seconds the longest-running worker has been busy."),
		adds:           counter("adds_total", "Adds handled by the workqueue."),
		retries:        counter("retries_total", "Rate-limited retries handled by the workqueue."),
		latency:        histogram("queue_duration_seconds", "Seconds an item stays in the workqueue before it is handled."),
		workDuration:   histogram("work_duration_seconds", "Seconds handling one item takes."),
	}
}

func (p *queueMetricsProvider) register(reg prometheus.Registerer) {
	reg.MustRegister(p.depth, p.unfinished, p.longestRunning, p.adds, p.retries, p.latency, p.workDuration)
}

func (p *queueMetricsProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}

func (p *queueMetricsProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}

func (p *queueMetricsProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}

func (p *queueMetricsProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name)
}

func (p *queueMetricsProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}

func (p *queueMetricsProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longestRunning.WithLabelValues(name)
}

func (p *queueMetricsProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}
