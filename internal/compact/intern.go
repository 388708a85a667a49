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

package compact

import (
	"hash/maphash"
	"maps"
	"reflect"
	"runtime"
	"sync"
	"unique"
)

// String returns the canonical copy of s.
func Intern(s string) string {
	if s == "" {
		return ""
	}
	h := unique.Make(s)
	recent.keep(h)
	return h.Value()
}

// Map returns a copy of m, sized to fit, with keys and values interned; nil
// stays nil. The copy is the caller's own.
func InternMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[Intern(k)] = Intern(v)
	}
	return out
}

// MapOwn is Map, except that the values of the keys own reports are kept
// as they are: values that name or identify one object (a name, a UID, a
// time) are held by that object alone, and a canonical copy of them would
// only add an entry of the interning table to each.
func InternMapOwn(m map[string]string, own func(key string) bool) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if !own(k) {
			v = Intern(v)
		}
		out[Intern(k)] = v
	}
	return out
}

// SharedMap returns a map equal to m that every caller passing an equal
// map shares (nil stays nil): for maps that repeat whole across objects,
// such as the labels of the pods of one workload. The result must not be
// modified; copy it first, as a DeepCopy of the object holding it does.
func SharedMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	return sharedMaps.Of(m)
}

// SharedKeys returns a map with the keys of m and nil values that every
// caller passing the same keys shares (nil stays nil): for the data of an
// object cached without its values. The result must not be modified.
func SharedKeys(m map[string][]byte) map[string][]byte {
	if m == nil {
		return nil
	}
	return sharedKeys.Of(m)
}

var (
	sharedMaps = newValues(hashMap, maps.Equal[map[string]string], InternMap)
	sharedKeys = newValues(hashKeys, sameKeys, internKeys)
)

var seed = maphash.MakeSeed()

// hashString hashes s with the seed of this process, for the hash functions
// of values.
func hashString(s string) uint64 { return maphash.String(seed, s) }

// hashBytes is hashString for bytes.
func hashBytes(b []byte) uint64 { return maphash.Bytes(seed, b) }

// hashMap does not depend on the order of m's entries.
func hashMap(m map[string]string) uint64 {
	sum := uint64(len(m))
	for k, v := range m {
		sum += maphash.Comparable(seed, [2]string{k, v})
	}
	return sum
}

func hashKeys(m map[string][]byte) uint64 {
	sum := uint64(len(m))
	for k := range m {
		sum += hashString(k)
	}
	return sum
}

func sameKeys(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

// internKeys is a copy of m's keys, interned, with nil values.
func internKeys(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k := range m {
		out[Intern(k)] = nil
	}
	return out
}

// values shares equal values of T: Of returns, for a value equal to one
// it returned during the last two garbage collections, that same value,
// and otherwise keeps a canonical copy of the new one. For slices and maps
// that many cached objects hold with the same contents; what Of returns
// is shared and must not be modified. A value nothing asks for during two
// collections is forgotten (the objects holding it keep it), so the
// tables follow what is in use and do not grow with the caches.
type values[T any] struct {
	hash      func(T) uint64
	equal     func(a, b T) bool
	canonical func(T) T
	seen      generations[uint64, []T]
}

// newValues returns a values whose canonical copies are made by canonical;
// hash must give equal values equal hashes.
func newValues[T any](hash func(T) uint64, equal func(a, b T) bool, canonical func(T) T) *values[T] {
	v := &values[T]{hash: hash, equal: equal, canonical: canonical}
	v.seen.init()
	rotateAfterCollections(&v.seen)
	return v
}

// Of returns the shared value equal to x.
func (v *values[T]) Of(x T) T {
	h := v.hash(x)
	v.seen.mu.Lock()
	defer v.seen.mu.Unlock()
	for _, c := range v.seen.current[h] {
		if v.equal(c, x) {
			return c
		}
	}
	for _, c := range v.seen.previous[h] {
		if v.equal(c, x) {
			v.seen.current[h] = append(v.seen.current[h], c)
			return c
		}
	}
	c := v.canonical(x)
	v.seen.current[h] = append(v.seen.current[h], c)
	return c
}

// recent keeps the handles of the strings interned since the last two
// garbage collections. The unique package forgets a canonical copy at the
// first collection after its last handle is dropped, even while cached
// objects still hold the copy's bytes; without this, every collection
// would start the sharing over and a string seen in each of two
// consecutive cycles would be held twice. Kept this way, a string interned
// at least once every other collection keeps one copy, and one nothing
// interns any more is forgotten two collections later.
var recent = newHandles()

type handles struct {
	generations[unique.Handle[string], struct{}]
}

func newHandles() *handles {
	h := &handles{}
	h.init()
	rotateAfterCollections(&h.generations)
	return h
}

func (h *handles) keep(handle unique.Handle[string]) {
	h.mu.Lock()
	h.current[handle] = struct{}{}
	h.mu.Unlock()
}

// generations holds what was used since the last two garbage collections:
// the current set, and the previous one that the next collection drops.
type generations[K comparable, V any] struct {
	mu                sync.Mutex
	current, previous map[K]V
}

func (g *generations[K, V]) init() { g.current = map[K]V{} }

func (g *generations[K, V]) rotate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.previous, g.current = g.current, make(map[K]V, len(g.current))
}

type rotator interface{ rotate() }

var rotators struct {
	sync.Mutex
	all []rotator
	// rounds counts the collections after which all were rotated, for the
	// tests.
	rounds int
}

// rotateAfterCollections rotates r after each garbage collection from now
// on.
func rotateAfterCollections(r rotator) {
	rotators.Lock()
	defer rotators.Unlock()
	if rotators.all == nil {
		armRotation()
	}
	rotators.all = append(rotators.all, r)
}

// armRotation rotates the registered sets after the next garbage
// collection, and again after each one that follows: the cleanup of an
// unreachable sentinel runs once per collection that finds it. The
// sentinel is larger than the tiny allocator's blocks, whose cleanups may
// never run.
func armRotation() {
	sentinel := new([32]byte)
	runtime.AddCleanup(sentinel, func(struct{}) {
		rotators.Lock()
		defer rotators.Unlock()
		for _, r := range rotators.all {
			r.rotate()
		}
		rotators.rounds++
		armRotation()
	}, struct{}{})
}

// Sharing the parts of API objects: values of the types the API writes in
// protobuf, hashed by what it writes of them.

// encoded is a part of an object that the API writes in protobuf.
type encoded interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// byValue shares equal values of T: equal as Go values (so a quantity
// written otherwise is another value), found by what the API writes of
// them.
func byValue[T encoded](canonical func(T) T) *values[T] {
	return newValues(hashEncoded[T], equalValues[T], canonical)
}

// byListValue shares equal lists of T; canonical keeps a list in an array
// of its length.
func byListValue[T any, P interface {
	*T
	encoded
}](canonical func([]T) []T) *values[[]T] {
	hash := func(list []T) uint64 {
		h := uint64(len(list))
		for i := range list {
			h = h*prime64 ^ hashEncoded(P(&list[i]))
		}
		return h
	}
	return newValues(hash, equalValues[[]T], canonical)
}

// shareValue is the shared value equal to v; nil stays nil.
func shareValue[T any, P interface {
	*T
	encoded
}](values *values[P], v P) P {
	if v == nil {
		return nil
	}
	return values.Of(v)
}

// shareList is the shared list equal to list; an empty list stays as it
// is.
func shareList[T any](values *values[[]T], list []T) []T {
	if len(list) == 0 {
		return list
	}
	return values.Of(list)
}

func same[T any](v T) T { return v }

func equalValues[T any](a, b T) bool { return reflect.DeepEqual(a, b) }

// hashEncoded hashes what the API writes of v, encoded into a buffer that
// the next hash reuses: the transform runs for every version of every pod.
func hashEncoded[T encoded](v T) uint64 {
	size := v.Size()
	buffer := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(buffer)
	if cap(*buffer) < size {
		*buffer = make([]byte, size)
	}
	data := (*buffer)[:size]
	n, err := v.MarshalToSizedBuffer(data)
	if err != nil {
		return 0 // cannot happen for a decoded object; all such share one bucket
	}
	return hashBytes(data[size-n:]) // written from the end
}

var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}
