package remotecluster

import (
	"sync"
	"testing"
	"time"
)

func TestBackoffSequence(t *testing.T) {
	backoff := NewBackoff()
	want := []time.Duration{
		30 * time.Second, 60 * time.Second, 120 * time.Second, 240 * time.Second,
		5 * time.Minute, 5 * time.Minute,
	}
	for i, wantDelay := range want {
		if got := backoff.Next("a"); got != wantDelay {
			t.Errorf("failure %d: delay = %v, want %v", i+1, got, wantDelay)
		}
	}
	if got := backoff.Failures("a"); got != len(want) {
		t.Errorf("Failures = %d, want %d", got, len(want))
	}
}

func TestBackoffStaysCappedAfterManyFailures(t *testing.T) {
	backoff := NewBackoff()
	var delay time.Duration
	for range 200 {
		delay = backoff.Next("a")
	}
	if delay != DefaultBackoffMax {
		t.Errorf("delay after 200 failures = %v, want %v", delay, DefaultBackoffMax)
	}
}

func TestBackoffResetAndKeysAreIndependent(t *testing.T) {
	backoff := NewBackoff()
	backoff.Next("a")
	backoff.Next("a")
	backoff.Next("b")

	backoff.Reset("a")

	if got := backoff.Next("a"); got != 30*time.Second {
		t.Errorf("delay after Reset = %v, want 30s", got)
	}
	if got := backoff.Next("b"); got != 60*time.Second {
		t.Errorf("delay of the other key = %v, want 60s", got)
	}
}

func TestBackoffWithCustomBounds(t *testing.T) {
	backoff := NewBackoffWith(time.Second, 3*time.Second)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second} {
		if got := backoff.Next("a"); got != want {
			t.Errorf("failure %d: delay = %v, want %v", i+1, got, want)
		}
	}
}

func TestBackoffConcurrentUse(t *testing.T) {
	backoff := NewBackoff()
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { backoff.Next("a") })
		wg.Go(func() { backoff.Failures("a") })
	}
	wg.Wait()
	if got := backoff.Failures("a"); got != 50 {
		t.Errorf("Failures = %d, want 50", got)
	}
}
