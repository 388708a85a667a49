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

package syncer

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/compact"
)

// bindingCollector reports what one binding lends and runs, read from the
// syncer's informer caches when /metrics is scraped: nothing to keep in
// step, and no request to either cluster.
type bindingCollector struct {
	virtualNodes corelisters.NodeLister // this binding's virtual nodes
	physicalPods cache.Store            // this binding's physical pods (physicalPodStatus)
	virtualPods  cache.Store            // the virtual pods the syncer caches
	nodes, lent  *prometheus.Desc
	pods, cached *prometheus.Desc
}

func newBindingCollector(binding string, virtualNodes corelisters.NodeLister, physicalPods, virtualPods cache.Store) *bindingCollector {
	constLabels := prometheus.Labels{"binding": binding}
	return &bindingCollector{
		virtualNodes: virtualNodes, physicalPods: physicalPods, virtualPods: virtualPods,
		cached: prometheus.NewDesc("kubeocean_binding_virtual_pods_cached",
			"Virtual pods the binding's syncer holds in its cache: those bound to nodes named like its virtual nodes. Pods elsewhere in the virtual cluster are dropped as they arrive.",
			nil, constLabels),
		nodes: prometheus.NewDesc("kubeocean_binding_virtual_nodes",
			"Virtual nodes of the binding, by their Ready condition (True, False, Unknown).", []string{"ready"}, constLabels),
		lent: prometheus.NewDesc("kubeocean_binding_lent_capacity",
			"What the binding's virtual nodes offer (their allocatable), summed, by resource: cores for cpu, bytes for memory and storage, a count otherwise.",
			[]string{"resource"}, constLabels),
		pods: prometheus.NewDesc("kubeocean_binding_pods",
			"The binding's pods in the physical cluster, by phase.", []string{"phase"}, constLabels),
	}
}

func (c *bindingCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.nodes
	ch <- c.lent
	ch <- c.pods
	ch <- c.cached
}

func (c *bindingCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.cached, prometheus.GaugeValue, float64(len(c.virtualPods.ListKeys())))
	nodes, err := c.virtualNodes.List(labels.Everything())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.nodes, err)
		return
	}
	ready := map[corev1.ConditionStatus]int{corev1.ConditionTrue: 0, corev1.ConditionFalse: 0, corev1.ConditionUnknown: 0}
	lent := map[corev1.ResourceName]float64{corev1.ResourceCPU: 0, corev1.ResourceMemory: 0, corev1.ResourcePods: 0}
	for _, n := range nodes {
		ready[nodeReady(n)]++
		for name, q := range n.Status.Allocatable {
			lent[name] += q.AsApproximateFloat64()
		}
	}
	for status, count := range ready {
		ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(count), string(status))
	}
	for name, value := range lent {
		ch <- prometheus.MustNewConstMetric(c.lent, prometheus.GaugeValue, value, string(name))
	}

	phases := map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodRunning: 0, corev1.PodSucceeded: 0, corev1.PodFailed: 0}
	for _, obj := range c.physicalPods.List() {
		status := compact.PhysicalPodStatus(obj)
		if status == nil {
			continue
		}
		phase := status.Phase
		if phase == "" {
			phase = corev1.PodPending
		}
		phases[phase]++
	}
	for phase, count := range phases {
		ch <- prometheus.MustNewConstMetric(c.pods, prometheus.GaugeValue, float64(count), string(phase))
	}
}

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
