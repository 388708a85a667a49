package events

import (
	"context"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
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
			return newKeptWatch(w, keep), nil
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

// keptWatch passes on the additions and modifications keep accepts, and
// every other watch event. It never blocks once stopped.
type keptWatch struct {
	source   watch.Interface
	keep     func(*corev1.Event) bool
	result   chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func newKeptWatch(source watch.Interface, keep func(*corev1.Event) bool) *keptWatch {
	w := &keptWatch{source: source, keep: keep, result: make(chan watch.Event), stopped: make(chan struct{})}
	go w.loop()
	return w
}

func (w *keptWatch) ResultChan() <-chan watch.Event { return w.result }

func (w *keptWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.source.Stop()
	})
}

func (w *keptWatch) loop() {
	defer close(w.result)
	for event := range w.source.ResultChan() {
		// Deletions all pass: the informer ignores those of events it
		// does not hold, and one it holds must go even if keep now
		// refuses it (its pod left the cache first).
		if e, ok := event.Object.(*corev1.Event); ok && (event.Type == watch.Added || event.Type == watch.Modified) && !w.keep(e) {
			continue
		}
		select {
		case w.result <- event:
		case <-w.stopped:
			return
		}
	}
}
