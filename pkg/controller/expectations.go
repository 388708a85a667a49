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

package controller

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Expectations remember, per key, the objects a controller wrote that its
// informer has not delivered yet, the way Kubernetes' own controllers keep
// ControllerExpectations: a write is expected to be observed, and until it
// is the controller does not act on the cache's silence.
//
// An informer shows a write once the write's event comes. A pass in
// between (another key's, or one the write's own side effects bring) would
// find the cache without the object, create it again and meet
// AlreadyExists (an HTTP 409) and a live read. Unlike Kubernetes' counting
// expectations these keep the object as written, so that the pass can use
// it in place of the cache: read the expectation before the cache (an
// event clears it only once the cache holds the object, so one of the two
// shows it), and clear it when the informer delivers the object
// (CreationObserved) or the controller deletes it (DeleteExpectations). An
// expectation lapses after its timeout, so an event that never comes
// costs one retry, not a stuck key.
//
// A nil *Expectations expects nothing. Expectations are safe for
// concurrent use.
type Expectations[K comparable, T any] struct {
	timeout time.Duration
	clock   clock.PassiveClock

	mu       sync.Mutex
	expected map[K]expectation[T]
}

type expectation[T any] struct {
	obj   T
	until time.Time
}

// NewExpectations returns expectations that lapse after timeout, as clock
// tells the time (the real clock when nil).
func NewExpectations[K comparable, T any](timeout time.Duration, c clock.PassiveClock) *Expectations[K, T] {
	if c == nil {
		c = clock.RealClock{}
	}
	return &Expectations[K, T]{timeout: timeout, clock: c, expected: map[K]expectation[T]{}}
}

// ExpectCreation records that obj was just written (typically created)
// under key and is expected to show up in the informer.
func (e *Expectations[K, T]) ExpectCreation(key K, obj T) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.expected[key] = expectation[T]{obj: obj, until: e.clock.Now().Add(e.timeout)}
}

// UpdateExpectation records obj as the latest write of an object still
// expected under key, for another timeout; it expects nothing for a key
// that is not expected, whose object the informer shows already.
func (e *Expectations[K, T]) UpdateExpectation(key K, obj T) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.expected[key]; ok {
		e.expected[key] = expectation[T]{obj: obj, until: e.clock.Now().Add(e.timeout)}
	}
}

// GetExpectations returns the object expected under key and how long it
// is still expected; false when none is, or its expectation lapsed.
func (e *Expectations[K, T]) GetExpectations(key K) (obj T, timeLeft time.Duration, ok bool) {
	if e == nil {
		return obj, 0, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.expected[key]
	if !ok {
		return obj, 0, false
	}
	now := e.clock.Now()
	if !now.Before(x.until) {
		delete(e.expected, key)
		return obj, 0, false
	}
	return x.obj, x.until.Sub(now), true
}

// SatisfiedExpectations tells whether nothing is expected under key any
// more: the controller may trust its cache for it.
func (e *Expectations[K, T]) SatisfiedExpectations(key K) bool {
	_, _, pending := e.GetExpectations(key)
	return !pending
}

// CreationObserved clears the expectation of key: the informer delivered
// an event of the object (an add, an update, or a deletion), and from then
// on the cache speaks for it.
func (e *Expectations[K, T]) CreationObserved(key K) { e.DeleteExpectations(key) }

// DeleteExpectations clears the expectation of key: the controller deletes
// the object, or no longer waits for it.
func (e *Expectations[K, T]) DeleteExpectations(key K) {
	if e == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.expected, key)
}
