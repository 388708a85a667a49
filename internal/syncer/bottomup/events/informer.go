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

package events

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/pkg/informers"
)

// NodeEventNamespace is where the kubelet and the node lifecycle
// controller record the events of nodes, which have no namespace.
const NodeEventNamespace = metav1.NamespaceDefault

// newEventInformer is an informer of the events of kind in namespace that
// keep accepts. The API server selects by kind (a field selector); keep
// decides the rest as events are decoded, so that events about anyone
// else's pods or nodes are never stored, indexed or handed to a handler,
// and memory follows the binding's objects, not the cluster's events. An
// event keep refused and then accepts (its pod came into the cache later)
// arrives with its next change, as a modification the informer adds.
func newEventInformer(client corev1client.EventsGetter, namespace, kind, component string, keep func(*corev1.Event) bool) cache.SharedIndexInformer {
	tweak := listOptions(kind, component)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			list, err := client.Events(namespace).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			list.Items = slices.DeleteFunc(list.Items, func(e corev1.Event) bool { return !keep(&e) })
			return list, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			w, err := client.Events(namespace).Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return informers.FilterWatch(w, keptEvents(keep)), nil
		},
	}
	informer := cache.NewSharedIndexInformerWithOptions(lw, &corev1.Event{}, cache.SharedIndexInformerOptions{
		Indexers: cache.Indexers{eventIndex: func(obj any) ([]string, error) {
			if e, ok := obj.(*corev1.Event); ok {
				return []string{aggregateOf(e)}, nil
			}
			return nil, nil
		}},
	})
	_ = informer.SetTransform(slim)
	return informer
}

// keptEvents passes the additions and modifications of the events keep
// accepts, and every other watch event. Deletions all pass: the informer
// ignores those of events it does not hold, and one it holds must go even
// if keep now refuses it (its pod left the cache first).
func keptEvents(keep func(*corev1.Event) bool) func(watch.Event) bool {
	return func(event watch.Event) bool {
		e, ok := event.Object.(*corev1.Event)
		return !ok || (event.Type != watch.Added && event.Type != watch.Modified) || keep(e)
	}
}
