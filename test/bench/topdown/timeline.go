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

package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

// timeline records, per virtual pod, when it reached each step, from
// informers on both clusters: virtual create (the create call returned),
// physical pod first seen, physical pod first Running, virtual pod first
// Running.
type timeline struct {
	mu                                             sync.Mutex
	created, physicalSeen, physicalRun, virtualRun map[string]time.Time
	changed                                        chan struct{} // closed and replaced on every mark
	stop                                           context.CancelFunc
}

// follow starts recording the pods labelled app=app: the physical ones in
// the mount namespace (labelled in Kubeocean's form, named after their
// virtual pod by annotation) and
// the virtual ones in the virtual namespace.
func follow(ctx context.Context, virtualKube, physKube kubernetes.Interface, app string) (*timeline, error) {
	ctx, cancel := context.WithCancel(ctx)
	tl := &timeline{created: map[string]time.Time{}, physicalSeen: map[string]time.Time{},
		physicalRun: map[string]time.Time{}, virtualRun: map[string]time.Time{}, changed: make(chan struct{}), stop: cancel}
	managed := kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean
	err := tl.watch(ctx, physKube, mount, managed+","+tenantmeta.LabelKey("app")+"="+app, tl.physicalSeen, tl.physicalRun,
		func(p *corev1.Pod) string { return p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName] })
	if err == nil {
		err = tl.watch(ctx, virtualKube, virtualNS, "app="+app, nil, tl.virtualRun, func(p *corev1.Pod) string { return p.Name })
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return tl, nil
}

func (tl *timeline) watch(ctx context.Context, kube kubernetes.Interface, namespace, selector string, seen, run map[string]time.Time, name func(*corev1.Pod) string) error {
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	informer := factory.Core().V1().Pods().Informer()
	observe := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		n := name(pod)
		if n == "" {
			return
		}
		if seen != nil {
			tl.mark(seen, n)
		}
		if pod.Status.Phase == corev1.PodRunning {
			tl.mark(run, n)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watching pods in %s: the watch did not start", namespace)
	}
	context.AfterFunc(ctx, factory.Shutdown)
	return nil
}

// mark records that name reached the step of m now, unless it had. A
// virtual pod counts as created when its create call returned.
func (tl *timeline) mark(m map[string]time.Time, name string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if _, ok := m[name]; ok {
		return
	}
	m[name] = time.Now()
	close(tl.changed)
	tl.changed = make(chan struct{})
}

// waitFor returns the time from start until step holds n pods.
func (tl *timeline) waitFor(ctx context.Context, start time.Time, timeout time.Duration, step map[string]time.Time, n int, what string) (time.Duration, error) {
	return benchenv.WaitForCount(ctx, start, timeout, n, what, func() (int, <-chan struct{}) {
		tl.mu.Lock()
		defer tl.mu.Unlock()
		return len(step), tl.changed
	})
}

// latencies are the sorted times from step from to step to of the pods
// created. A pod that lacks either timestamp (a watch missed it) is not
// given a made-up value: it is counted in missed.
func (tl *timeline) latencies(from, to map[string]time.Time) latency {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var l latency
	for name := range tl.created {
		a, okA := from[name]
		b, okB := to[name]
		if !okA || !okB {
			l.missed++
			continue
		}
		d := b.Sub(a)
		if d < 0 {
			// The two watches delivered out of order: kept as measured,
			// and counted.
			l.negative++
		}
		l.values = append(l.values, d)
	}
	slices.Sort(l.values)
	return l
}

// since returns the times of step from start, in order.
func (tl *timeline) since(step map[string]time.Time, start time.Time) []time.Duration {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	out := make([]time.Duration, 0, len(step))
	for _, at := range step {
		out = append(out, at.Sub(start))
	}
	slices.Sort(out)
	return out
}

// latency is a sorted distribution with the pods it could not measure.
type latency struct {
	values []time.Duration
	// missed: pods without one of the two timestamps; negative: pods whose
	// second step was seen before the first (left in values).
	missed, negative int
}

func (l latency) percentile(p float64) time.Duration {
	if len(l.values) == 0 {
		return 0
	}
	return l.values[int(p*float64(len(l.values)-1))]
}

func (l latency) String() string {
	s := fmt.Sprintf("%v / %v", l.percentile(0.5).Round(time.Millisecond), l.percentile(0.99).Round(time.Millisecond))
	if l.missed > 0 || l.negative > 0 {
		s += fmt.Sprintf(" (%d missed, %d negative)", l.missed, l.negative)
	}
	return s
}
