// Package unseen remembers objects a controller just wrote that its cache
// has not shown yet. An informer shows a write once the write's event
// comes; a pass in between (another key's, or one the write's own
// side-effects bring) would find the cache without it, create it again and
// meet AlreadyExists (an HTTP 409) and a live read. The controller reads
// the memory before its cache, and forgets an object at its first event,
// when it deletes it, or when the memory's time runs out.
package unseen

import (
	"sync"
	"time"
)

// Objects remembers written objects of type T by key K for a while. The
// zero value is not usable; use New. A nil *Objects remembers nothing. It
// is safe for concurrent use.
type Objects[K comparable, T any] struct {
	memory time.Duration

	mu      sync.Mutex
	objects map[K]written[T]
}

type written[T any] struct {
	obj   T
	until time.Time
}

// New returns an empty memory that keeps each object for memory.
func New[K comparable, T any](memory time.Duration) *Objects[K, T] {
	return &Objects[K, T]{memory: memory, objects: map[K]written[T]{}}
}

// Remember records obj, written now (typically created).
func (o *Objects[K, T]) Remember(key K, obj T, now time.Time) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.objects[key] = written[T]{obj: obj, until: now.Add(o.memory)}
}

// Replace records obj as the latest write of an object still remembered,
// and does nothing for one that is not.
func (o *Objects[K, T]) Replace(key K, obj T, now time.Time) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.objects[key]; ok {
		o.objects[key] = written[T]{obj: obj, until: now.Add(o.memory)}
	}
}

// Get returns the object remembered under key, while its time lasts.
func (o *Objects[K, T]) Get(key K, now time.Time) (T, bool) {
	if o == nil {
		var none T
		return none, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.objects[key]
	if ok && !now.Before(w.until) {
		delete(o.objects, key)
		ok = false
	}
	return w.obj, ok
}

// Forget drops key: the cache shows the object now, or it is being
// deleted.
func (o *Objects[K, T]) Forget(key K) {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.objects, key)
}
