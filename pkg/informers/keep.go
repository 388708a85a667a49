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

package informers

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// keptPodInformer is the pod informer of a scope with KeepPod: list and
// watch results are filtered on the client, before the informer, so that
// the pods KeepPod refuses are decoded and dropped, never stored, indexed
// or handed to a handler. It carries the namespace index the factory's own
// pod informers carry.
func (s Scope) keptPodInformer(client kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			s.tweak(&opts)
			list, err := client.CoreV1().Pods(s.Namespace).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			list.Items = slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return !s.KeepPod(&p) })
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			s.tweak(&opts)
			w, err := client.CoreV1().Pods(s.Namespace).Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return FilterWatch(w, keptPods(s.KeepPod)), nil
		},
	}
	return cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Pod{},
		cache.SharedIndexInformerOptions{
			ResyncPeriod: resync,
			Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		})
}

// keptPods passes the watch events of the pods keep accepts, and every
// event that is not about one pod (bookmarks, among them the end of a watch
// list's initial events, and errors). A pod that starts to be kept arrives
// as a modification of a pod the informer does not hold, which it adds.
func keptPods(keep func(*corev1.Pod) bool) func(watch.Event) bool {
	return func(event watch.Event) bool {
		switch event.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			pod, ok := event.Object.(*corev1.Pod)
			return !ok || keep(pod)
		}
		return true
	}
}

// FilterWatch passes on the events of source that pass accepts, for a
// list-watch that drops objects on the client before an informer stores
// them. Unlike watch.Filter, it never blocks once stopped.
func FilterWatch(source watch.Interface, pass func(watch.Event) bool) watch.Interface {
	w := &filteredWatch{source: source, pass: pass, result: make(chan watch.Event), stopped: make(chan struct{})}
	go w.loop()
	return w
}

type filteredWatch struct {
	source   watch.Interface
	pass     func(watch.Event) bool
	result   chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func (w *filteredWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *filteredWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.source.Stop()
	})
}

func (w *filteredWatch) loop() {
	defer close(w.result)
	for event := range w.source.ResultChan() {
		if !w.pass(event) {
			continue
		}
		select {
		case w.result <- event:
		case <-w.stopped:
			return
		}
	}
}
