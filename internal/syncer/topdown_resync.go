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
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/internal/app"
)

// TopDownResyncPeriod is how often every top-down controller (pods and the
// copies of their ConfigMaps, Secrets, PVCs and PVs) reconciles again every
// key its caches know of. Informer events drive the controllers; this is
// the backstop for a change whose event was dropped on purpose (a filter
// that judged it not ours) or a key that a bug left without a requeue, so
// that no object stays out of step for longer than this. The keys come
// from the informer caches: nothing is listed from an apiserver, and a
// reconcile that finds everything in step writes nothing.
const TopDownResyncPeriod = 5 * time.Minute

// resyncSource gives queue keys for every object of a cache.
type resyncSource struct {
	store cache.Store
	keys  func(obj any) []cache.ObjectName
}

// sourceOf maps every T in informer's cache through keys.
func sourceOf[T metav1.Object](informer cache.SharedIndexInformer, keys func(T) []cache.ObjectName) resyncSource {
	return resyncSource{store: informer.GetStore(), keys: func(obj any) []cache.ObjectName {
		typed, ok := obj.(T)
		if !ok {
			return nil
		}
		return keys(typed)
	}}
}

// resyncTarget is one controller's queue and where its keys come from.
type resyncTarget struct {
	name    string
	enqueue func(cache.ObjectName)
	sources []resyncSource
}

// resync enqueues every key of every source once and returns how many
// keys it enqueued.
func (t resyncTarget) resync() int {
	seen := map[cache.ObjectName]struct{}{}
	for _, source := range t.sources {
		for _, obj := range source.store.List() {
			for _, key := range source.keys(obj) {
				if _, ok := seen[key]; !ok {
					seen[key] = struct{}{}
					t.enqueue(key)
				}
			}
		}
	}
	return len(seen)
}

// resyncRunnable resyncs targets every period (the first time one period
// after start: the informers' initial lists enqueue everything then).
func resyncRunnable(period time.Duration, ticks clock.WithTicker, targets ...resyncTarget) app.Runnable {
	return app.Runnable{Name: "topdown-resync", Run: func(ctx context.Context) error {
		logger := klog.FromContext(ctx)
		ticker := ticks.NewTicker(period)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-ticker.C():
				for _, t := range targets {
					logger.V(4).Info("Periodic resync", "controller", t.name, "keys", t.resync())
				}
			}
		}
	}}
}
