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
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestSyncLatency(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC)
	virtualPods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	physicalPods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vnode-b-a"}})
	virtual := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "vnode-b-a"}, ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: "v-uid",
		CreationTimestamp: metav1.NewTime(now.Add(-3 * time.Second)),
		Annotations:       map[string]string{kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "mount", kubeoceanv1alpha1.AnnotationPhysicalPodName: "web-abc"}}}
	physical := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "web-abc", Annotations: map[string]string{
		kubeoceanv1alpha1.AnnotationVirtualPodNamespace: "team", kubeoceanv1alpha1.AnnotationVirtualPodName: "web", kubeoceanv1alpha1.AnnotationVirtualPodUID: "v-uid"}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-2 * time.Second))}}},
			{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now.Add(-1 * time.Second))}}},
		}}}
	_ = virtualPods.Add(virtual)
	_ = physicalPods.Add(physical)
	l := newSyncLatency("b", corelisters.NewPodLister(virtualPods), corelisters.NewPodLister(physicalPods), corelisters.NewNodeLister(nodes))
	l.now = func() time.Time { return now }

	physicalEvents := l.physicalHandler()
	physicalEvents.OnAdd(physical, true) // listed at start-up: not timed
	if n := testutil.CollectAndCount(l.toPhysical); n != 1 {
		t.Fatalf("collect: %d", n)
	}
	physicalEvents.OnAdd(physical, false)
	stranger := physical.DeepCopy()
	stranger.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "another-pod-of-that-name"
	physicalEvents.OnAdd(stranger, false)

	virtualEvents := l.virtualHandler()
	running := virtual.DeepCopy()
	running.Status.Phase = corev1.PodRunning
	virtualEvents.OnUpdate(virtual, running)
	virtualEvents.OnUpdate(running, running) // already Running: not timed again
	elsewhere := virtual.DeepCopy()
	elsewhere.Spec.NodeName = "vnode-other-binding"
	runningElsewhere := elsewhere.DeepCopy()
	runningElsewhere.Status.Phase = corev1.PodRunning
	virtualEvents.OnUpdate(elsewhere, runningElsewhere) // another binding's pod: not timed

	lost := running.DeepCopy()
	lost.Status.Phase, lost.Status.Reason = corev1.PodFailed, "PhysicalPodLost"
	virtualEvents.OnUpdate(running, lost)
	virtualEvents.OnUpdate(lost, lost) // counted once
	lostElsewhere := runningElsewhere.DeepCopy()
	lostElsewhere.Status.Phase, lostElsewhere.Status.Reason = corev1.PodFailed, "PhysicalPodLost"
	virtualEvents.OnUpdate(runningElsewhere, lostElsewhere)
	if got := testutil.ToFloat64(l.lost); got != 1 {
		t.Fatalf("lost pods %v, want 1", got)
	}

	if got := histogram(t, l.toPhysical); got.count != 1 || got.sum != 3 {
		t.Fatalf("to physical: %+v, want one of 3s", got)
	}
	if got := histogram(t, l.toRunning); got.count != 1 || got.sum != 1 {
		t.Fatalf("to running: %+v, want one of 1s (from the last container's start)", got)
	}
}

type histogramValue struct {
	count uint64
	sum   float64
}

func histogram(t *testing.T, h interface{ Write(*dto.Metric) error }) histogramValue {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return histogramValue{count: m.GetHistogram().GetSampleCount(), sum: m.GetHistogram().GetSampleSum()}
}
