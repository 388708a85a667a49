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

package secretwatch

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/pkg/informers"
)

// Watches caches the Secrets it is told to watch (Watch), each through an
// informer of its own. Build it, add handlers, then Run it; Watch may be
// called before Run (the watches start with Run) and at any time after.
type Watches struct {
	client kubernetes.Interface

	mu sync.Mutex
	// ctx is Run's; nil before Run. stopped: Run is done, or returning.
	ctx      context.Context
	stopped  bool
	watches  map[cache.ObjectName]*secretWatch
	handlers []handler
	started  sync.WaitGroup
}

type handler struct {
	events cache.ResourceEventHandler
	synced func(cache.ObjectName)
}

// secretWatch is the informer of one Secret; cancel is set once it runs.
type secretWatch struct {
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
}

// New prepares watches that list and watch with client; it starts nothing.
func New(client kubernetes.Interface) *Watches {
	return &Watches{client: client, watches: map[cache.ObjectName]*secretWatch{}}
}

// AddEventHandler registers events on the informer of every Secret watched,
// now and later, and synced, called with the Secret's key once its watch
// has synced (whether the Secret exists or not). Call it before Watch.
func (w *Watches) AddEventHandler(events cache.ResourceEventHandler, synced func(cache.ObjectName)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers = append(w.handlers, handler{events: events, synced: synced})
	for _, sw := range w.watches {
		if _, err := sw.informer.AddEventHandler(events); err != nil {
			return err
		}
	}
	return nil
}

// Watch makes keys the Secrets watched: it starts the watches of those not
// watched yet and stops those of the others, whose Secrets leave the cache.
func (w *Watches) Watch(keys []cache.ObjectName) {
	wanted := make(map[cache.ObjectName]bool, len(keys))
	for _, key := range keys {
		if key.Namespace != "" && key.Name != "" {
			wanted[key] = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, sw := range w.watches {
		if !wanted[key] {
			if sw.cancel != nil {
				sw.cancel()
			}
			delete(w.watches, key)
		}
	}
	for key := range wanted {
		if _, ok := w.watches[key]; ok {
			continue
		}
		sw := &secretWatch{informer: w.newInformer(key)}
		w.watches[key] = sw
		if w.ctx != nil && !w.stopped {
			w.start(key, sw)
		}
	}
}

// newInformer is the informer of the Secret key alone. Its handlers are
// added before it starts, so they see its first list.
func (w *Watches) newInformer(key cache.ObjectName) cache.SharedIndexInformer {
	selector := fields.OneTermEqualSelector(metav1.ObjectNameField, key.Name).String()
	informer := coreinformers.NewFilteredSecretInformer(w.client, key.Namespace, 0, cache.Indexers{},
		func(opts *metav1.ListOptions) { opts.FieldSelector = selector })
	// Cannot fail before the informer starts.
	_ = informer.SetTransform(informers.DropManagedFields)
	for _, h := range w.handlers {
		// Nor can this.
		_, _ = informer.AddEventHandler(h.events)
	}
	return informer
}

// start runs the informer of key until Run's context ends or key is no
// longer watched. Called with mu held.
func (w *Watches) start(key cache.ObjectName, sw *secretWatch) {
	ctx, cancel := context.WithCancel(w.ctx)
	sw.cancel = cancel
	handlers := w.handlers
	w.started.Add(2)
	go func() {
		defer w.started.Done()
		sw.informer.RunWithContext(ctx)
	}()
	go func() {
		defer w.started.Done()
		if !cache.WaitForCacheSync(ctx.Done(), sw.informer.HasSynced) {
			return
		}
		for _, h := range handlers {
			if h.synced != nil {
				h.synced(key)
			}
		}
	}()
}

// Run starts the watches asked for so far, and those asked for later as
// they are, until ctx ends; it returns once every watch has stopped.
func (w *Watches) Run(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	for key, sw := range w.watches {
		w.start(key, sw)
	}
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.started.Wait()
	return nil
}

// Synced tells whether the Secret key is watched and its watch has synced:
// only then does Get say for sure whether it exists.
func (w *Watches) Synced(key cache.ObjectName) bool {
	informer := w.running(key)
	return informer != nil && informer.HasSynced()
}

// running is the informer of key when key is watched and its watch runs.
func (w *Watches) running(key cache.ObjectName) cache.SharedIndexInformer {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sw, ok := w.watches[key]; ok && sw.cancel != nil {
		return sw.informer
	}
	return nil
}

// Get returns the cached Secret namespace/name, a NotFound error when its
// synced watch does not hold it, and another error when it is not watched
// or its watch has not synced yet. The Secret is shared: do not modify it.
func (w *Watches) Get(namespace, name string) (*corev1.Secret, error) {
	key := cache.ObjectName{Namespace: namespace, Name: name}
	informer := w.running(key)
	if informer == nil || !informer.HasSynced() {
		return nil, fmt.Errorf("secret %s is not watched yet", key)
	}
	obj, exists, err := informer.GetStore().GetByKey(key.String())
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	secret, ok := obj.(*corev1.Secret)
	if !ok {
		return nil, fmt.Errorf("secret %s is cached as %T", key, obj)
	}
	return secret, nil
}

// Len is the number of Secrets watched.
func (w *Watches) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}
