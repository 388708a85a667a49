package dependents

import (
	"reflect"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// createdCopyMemory bounds how long a copy just created stands in for the
// physical cache, which normally shows it within milliseconds.
const createdCopyMemory = time.Minute

// createdCopies remembers the copies the Syncer created that the physical
// caches have not shown yet. Pods of a burst share ConfigMaps and Secrets:
// the next pod's pass, or the copy controller woken by the virtual
// object's mark, may come before the copy's event, and without this memory
// it would create the copy again, to meet AlreadyExists (an HTTP 409) and
// a live read. A copy is forgotten at its first event (add, update or
// delete: from then on the cache speaks for it), when the Syncer deletes
// it, and after createdCopyMemory.
type createdCopies struct {
	mu     sync.Mutex
	copies map[copyKey]createdCopy
}

// copyKey is a copy's Go type (kinds share none but Secrets, whose CSI
// copies live outside the mount namespace) and place.
type copyKey struct {
	typ             reflect.Type
	namespace, name string
}

type createdCopy struct {
	obj   any
	until time.Time
}

func keyOf(obj any) (copyKey, bool) {
	accessor, err := apimeta.Accessor(obj)
	if err != nil {
		return copyKey{}, false
	}
	return copyKey{reflect.TypeOf(obj), accessor.GetNamespace(), accessor.GetName()}, true
}

// remember records obj as just created by the Syncer.
func (c *createdCopies) remember(obj any, now time.Time) { c.record(obj, now, true) }

// replace records obj as the latest write of a copy still remembered.
func (c *createdCopies) replace(obj any, now time.Time) { c.record(obj, now, false) }

func (c *createdCopies) record(obj any, now time.Time, created bool) {
	key, ok := keyOf(obj)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, remembered := c.copies[key]; !remembered && !created {
		return
	}
	if c.copies == nil {
		c.copies = map[copyKey]createdCopy{}
	}
	c.copies[key] = createdCopy{obj: obj, until: now.Add(createdCopyMemory)}
}

// get returns the remembered copy of type T at namespace/name.
func get[T object](c *createdCopies, namespace, name string, now time.Time) (T, bool) {
	var none T
	key := copyKey{reflect.TypeFor[T](), namespace, name}
	c.mu.Lock()
	defer c.mu.Unlock()
	created, ok := c.copies[key]
	if !ok {
		return none, false
	}
	if !now.Before(created.until) {
		delete(c.copies, key)
		return none, false
	}
	obj, ok := created.obj.(T)
	return obj, ok
}

// forget drops what is remembered of obj's copy.
func (c *createdCopies) forget(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	key, ok := keyOf(obj)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.copies, key)
}

// CopySeen tells the Syncer that a physical cache delivered an event of
// obj (a copy, or a tombstone of one): from then on the cache speaks for
// it. The per-kind controllers call it (ControllerOptions.Seen) in the
// handler that maps the event to its key, so it is done before the
// reconcile the event brings; tests that fill caches by hand call it for
// what they put in or take out.
func (s *Syncer) CopySeen(obj any) { s.created.forget(obj) }
