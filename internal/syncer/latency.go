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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// syncLatency times the two hops a user waits for, from the informers'
// events: a virtual pod's creation to its physical twin's appearing, and
// the twin's containers running to the virtual pod's Running. Both start
// from API timestamps, which have whole seconds, so a figure may read up to
// a second long. Objects the caches list at start-up are not timed. It also
// counts the binding's virtual pods failed because their physical pod was
// lost.
type syncLatency struct {
	toPhysical, toRunning prometheus.Histogram
	lost                  prometheus.Counter
	virtualPods           corelisters.PodLister
	physicalPods          corelisters.PodLister
	virtualNodes          corelisters.NodeLister // the binding's
	now                   func() time.Time
}

var latencyBuckets = []float64{.25, .5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300}

func newSyncLatency(binding string, virtualPods, physicalPods corelisters.PodLister, virtualNodes corelisters.NodeLister) *syncLatency {
	constLabels := prometheus.Labels{"binding": binding}
	return &syncLatency{
		toPhysical: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "kubeocean_pod_sync_to_physical_seconds",
			Help:        "From a virtual pod's creation (its creationTimestamp) to its physical pod appearing in the syncer's cache.",
			Buckets:     latencyBuckets,
			ConstLabels: constLabels,
		}),
		toRunning: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "kubeocean_pod_running_to_virtual_seconds",
			Help:        "From a physical pod's containers running (the latest startedAt) to its virtual pod's phase turning Running in the syncer's cache.",
			Buckets:     latencyBuckets,
			ConstLabels: constLabels,
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "kubeocean_pods_lost_total",
			Help:        "Virtual pods failed because their physical pod disappeared (reason PhysicalPodLost).",
			ConstLabels: constLabels,
		}),
		virtualPods: virtualPods, physicalPods: physicalPods, virtualNodes: virtualNodes, now: time.Now,
	}
}

func (l *syncLatency) collectors() []prometheus.Collector {
	return []prometheus.Collector{l.toPhysical, l.toRunning, l.lost}
}

// physicalHandler observes physical pods that appear after start-up.
func (l *syncLatency) physicalHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerDetailedFuncs{AddFunc: func(obj any, initialList bool) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || initialList {
			return
		}
		namespace, name := pod.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace], pod.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName]
		virtual, err := l.virtualPods.Pods(namespace).Get(name)
		if err != nil || string(virtual.UID) != pod.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] {
			return
		}
		l.toPhysical.Observe(max(l.now().Sub(virtual.CreationTimestamp.Time), 0).Seconds())
	}}
}

// virtualHandler observes virtual pods whose phase turns Running.
func (l *syncLatency) virtualHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		old, ok1 := oldObj.(*corev1.Pod)
		pod, ok2 := newObj.(*corev1.Pod)
		if !ok1 || !ok2 || pod.Spec.NodeName == "" {
			return
		}
		if _, err := l.virtualNodes.Get(pod.Spec.NodeName); err != nil {
			return // not on one of this binding's virtual nodes
		}
		if pod.Status.Reason == kubeoceanv1alpha1.ReasonPhysicalPodLost && old.Status.Reason != kubeoceanv1alpha1.ReasonPhysicalPodLost {
			l.lost.Inc()
			return
		}
		if old.Status.Phase == corev1.PodRunning || pod.Status.Phase != corev1.PodRunning {
			return
		}
		namespace, name := pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace], pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
		if name == "" {
			return // not one of ours
		}
		physical, err := l.physicalPods.Pods(namespace).Get(name)
		if err != nil {
			return
		}
		if started := containersRunningSince(physical); !started.IsZero() {
			l.toRunning.Observe(max(l.now().Sub(started), 0).Seconds())
		}
	}}
}

// containersRunningSince is when the last of the pod's running containers
// started, zero when none runs.
func containersRunningSince(pod *corev1.Pod) time.Time {
	var latest time.Time
	for _, s := range pod.Status.ContainerStatuses {
		if s.State.Running != nil && s.State.Running.StartedAt.After(latest) {
			latest = s.State.Running.StartedAt.Time
		}
	}
	return latest
}
