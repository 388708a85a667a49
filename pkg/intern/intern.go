package intern

import (
	"runtime"
	"sync"
	"unique"
)

// String returns the canonical copy of s.
func String(s string) string {
	if s == "" {
		return ""
	}
	h := unique.Make(s)
	recent.keep(h)
	return h.Value()
}

// Map returns a copy of m, sized to fit, with keys and values interned; nil
// stays nil.
func Map(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[String(k)] = String(v)
	}
	return out
}

// handles keeps the handles of the strings interned since the last two
// garbage collections. The unique package forgets a canonical copy at the
// first collection after its last handle is dropped, even while cached
// objects still hold the copy's bytes; without this, every collection
// would start the sharing over and a string seen in each of two
// consecutive cycles would be held twice. Kept this way, a string interned
// at least once every other collection keeps one copy, and one nothing
// interns any more is forgotten two collections later.
type handles struct {
	mu                sync.Mutex
	current, previous map[unique.Handle[string]]struct{}
	// rotations counts the collections seen, for the tests.
	rotations int
}

var recent = newHandles()

func newHandles() *handles {
	h := &handles{current: map[unique.Handle[string]]struct{}{}}
	h.armRotation()
	return h
}

func (h *handles) keep(handle unique.Handle[string]) {
	h.mu.Lock()
	h.current[handle] = struct{}{}
	h.mu.Unlock()
}

// armRotation rotates the sets after the next garbage collection, and
// again after each one that follows: the cleanup of an unreachable
// sentinel runs once per collection that finds it. The sentinel is larger
// than the tiny allocator's blocks, whose cleanups may never run.
func (h *handles) armRotation() {
	sentinel := new([32]byte)
	runtime.AddCleanup(sentinel, func(h *handles) {
		h.rotate()
		h.armRotation()
	}, h)
}

func (h *handles) rotate() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.previous, h.current = h.current, make(map[unique.Handle[string]]struct{}, len(h.current))
	h.rotations++
}
