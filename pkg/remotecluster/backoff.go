package remotecluster

import (
	"sync"
	"time"
)

const (
	// DefaultBackoffBase is the delay after the first transient failure.
	DefaultBackoffBase = 30 * time.Second
	// DefaultBackoffMax caps the delay so a cluster that comes back is
	// noticed within a few minutes.
	DefaultBackoffMax = 5 * time.Minute
)

// Backoff counts consecutive transient failures per key and turns them into
// a retry delay of min(base * 2^failures, max). It is safe for concurrent use.
//
// It only counts; the caller schedules the retry (for example with a
// workqueue's AddAfter), so no clock is needed.
type Backoff struct {
	base, max time.Duration

	mu       sync.Mutex
	failures map[string]int
}

// NewBackoff returns a Backoff going 30s, 60s, 120s, 240s, then 5m for good.
func NewBackoff() *Backoff {
	return NewBackoffWith(DefaultBackoffBase, DefaultBackoffMax)
}

// NewBackoffWith returns a Backoff with a custom first delay and cap.
func NewBackoffWith(base, max time.Duration) *Backoff {
	return &Backoff{base: base, max: max, failures: map[string]int{}}
}

// Next records one more failure for key and returns how long to wait before
// retrying it.
func (b *Backoff) Next(key string) time.Duration {
	b.mu.Lock()
	failures := b.failures[key]
	b.failures[key] = failures + 1
	b.mu.Unlock()

	delay := b.base
	// Doubling step by step (rather than shifting by failures) cannot overflow.
	for i := 0; i < failures && delay < b.max; i++ {
		delay *= 2
	}
	return min(delay, b.max)
}

// Reset forgets the failures of key, typically after a success or when the
// object behind key is deleted.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, key)
}

// Failures returns how many consecutive failures key has had.
func (b *Backoff) Failures(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.failures[key]
}
