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

package benchenv

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodCounter counts the pods of a namespace that satisfy a condition, from
// a watch. Polling instead (a LIST of thousands of pods every few hundred
// milliseconds) would load the apiserver under measurement with work the
// system under test never asked for.
type PodCounter struct {
	mu      sync.Mutex
	matched map[string]bool
	changed chan struct{} // closed and replaced on every change
	stop    context.CancelFunc
}

// CountPods starts counting the pods of namespace matching selector for
// which cond holds; Stop ends it.
func CountPods(ctx context.Context, kube kubernetes.Interface, namespace, selector string, cond func(*corev1.Pod) bool) (*PodCounter, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &PodCounter{matched: map[string]bool{}, changed: make(chan struct{}), stop: cancel}
	factory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(namespace),
		kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	informer := factory.Core().V1().Pods().Informer()
	observe := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			c.set(pod.Name, cond(pod))
		}
	}
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				c.set(pod.Name, false)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		cancel()
		return nil, fmt.Errorf("counting pods in %s: the watch did not start", namespace)
	}
	context.AfterFunc(ctx, factory.Shutdown)
	return c, nil
}

func (c *PodCounter) set(name string, matches bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.matched[name] == matches {
		return
	}
	if matches {
		c.matched[name] = true
	} else {
		delete(c.matched, name)
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// WaitFor returns the time from start until at least n pods match, or an
// error after timeout.
func (c *PodCounter) WaitFor(ctx context.Context, start time.Time, timeout time.Duration, n int, what string) (time.Duration, error) {
	return WaitForCount(ctx, start, timeout, n, what, func() (int, <-chan struct{}) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.matched), c.changed
	})
}

// WaitForCount returns the time from start until state's count is at least
// n, or an error after timeout. state reads the count and a channel that is
// closed at its next change, under the same lock.
func WaitForCount(ctx context.Context, start time.Time, timeout time.Duration, n int, what string, state func() (int, <-chan struct{})) (time.Duration, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		count, changed := state()
		if count >= n {
			return time.Since(start), nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return 0, fmt.Errorf("%s: %d/%d after %s", what, count, n, timeout)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (c *PodCounter) Stop() { c.stop() }
