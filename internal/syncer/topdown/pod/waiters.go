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

package pod

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// dependency names one object a pod refers to.
type dependency struct {
	kind, namespace, name string
}

// waiters remembers which pods wait for which missing or unready objects,
// so that the object's arrival (a ConfigMap made by cert-manager, a Secret
// by external-secrets, a PVC bound) wakes them at once instead of on their
// retry backoff. It is safe for concurrent use.
type waiters struct {
	mu     sync.Mutex
	byPod  map[cache.ObjectName][]dependency
	byDeps map[dependency]map[cache.ObjectName]struct{}
}

func newWaiters() *waiters {
	return &waiters{byPod: map[cache.ObjectName][]dependency{}, byDeps: map[dependency]map[cache.ObjectName]struct{}{}}
}

// set records that pod waits for deps, and for nothing else (none: the pod
// waits no more).
func (w *waiters) set(pod cache.ObjectName, deps []dependency) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.byPod[pod] {
		delete(w.byDeps[d], pod)
		if len(w.byDeps[d]) == 0 {
			delete(w.byDeps, d)
		}
	}
	if len(deps) == 0 {
		delete(w.byPod, pod)
		return
	}
	w.byPod[pod] = deps
	for _, d := range deps {
		if w.byDeps[d] == nil {
			w.byDeps[d] = map[cache.ObjectName]struct{}{}
		}
		w.byDeps[d][pod] = struct{}{}
	}
}

// of returns the pods that wait for d.
func (w *waiters) of(d dependency) []cache.ObjectName {
	w.mu.Lock()
	defer w.mu.Unlock()
	pods := make([]cache.ObjectName, 0, len(w.byDeps[d]))
	for pod := range w.byDeps[d] {
		pods = append(pods, pod)
	}
	return pods
}

// handler wakes the pods waiting for an object of kind when it is added or
// changes (a PVC that binds). The informer may hold only metadata.
func (w *waiters) handler(kind string, enqueue func(cache.ObjectName)) controller.Handler[metav1.Object, cache.ObjectName] {
	return controller.Handler[metav1.Object, cache.ObjectName]{
		Enqueue: enqueue,
		Keys: func(obj metav1.Object) []cache.ObjectName {
			return w.of(dependency{kind: kind, namespace: obj.GetNamespace(), name: obj.GetName()})
		},
		Changed: func(oldObj, newObj metav1.Object) bool {
			return oldObj.GetResourceVersion() != newObj.GetResourceVersion()
		},
	}
}

// waitedFor lists what err says the pod waits for.
func waitedFor(err *dependents.NotReadyError) dependency {
	return dependency{kind: err.Kind, namespace: err.Namespace, name: err.Name}
}
