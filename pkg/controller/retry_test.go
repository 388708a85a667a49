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
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

// slowRetries is a rate limiter whose backoff no test would wait out: a key
// that comes back quickly was retried through another path.
func slowRetries() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Hour, time.Hour)
}

func TestClassify(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want failureClass
	}{
		{"conflict", apierrors.NewConflict(pods, "p", errors.New("changed")), failureConflict},
		{"wrapped conflict", fmt.Errorf("updating: %w", apierrors.NewConflict(pods, "p", errors.New("changed"))), failureConflict},
		{"connection refused", fmt.Errorf("listing: %w", refused), failureUnavailable},
		{"bare ECONNREFUSED", syscall.ECONNREFUSED, failureUnavailable},
		{"service unavailable", apierrors.NewServiceUnavailable("etcd is down"), failureUnavailable},
		{"server timeout", apierrors.NewServerTimeout(pods, "create", 1), failureUnavailable},
		{"too many requests", apierrors.NewTooManyRequests("slow down", 1), failureUnavailable},
		{"internal error", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), failureUnavailable},
		{"not found", apierrors.NewNotFound(pods, "p"), failureOther},
		{"forbidden", apierrors.NewForbidden(pods, "p", errors.New("no")), failureOther},
		{"invalid", apierrors.NewBadRequest("bad"), failureOther},
		{"plain", errors.New("something else"), failureOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.err); got != tc.want {
				t.Errorf("classify(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// A conflict means only that the cache was behind: the key comes back at
// once, not after the controller's backoff.
func TestConflictIsRetriedAtOnce(t *testing.T) {
	rec := newRecorder(func(_ string, call int) (Result, error) {
		if call < 4 {
			return Result{}, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "p", errors.New("changed"))
		}
		return Result{}, nil
	})
	c := New(Options[string]{Name: "conflicts", Reconcile: rec.reconcile, RateLimiter: slowRetries()})
	start(t, c, 1)
	c.Enqueue("p")
	eventually(t, "the conflicting key is retried until it succeeds", func() bool { return rec.count("p") == 4 })
}

// While an apiserver does not answer a key is retried a few seconds apart
// at most, whatever the controller's backoff, so it converges soon after
// the apiserver is back; other errors keep the controller's backoff.
func TestUnavailableIsRetriedWithinTheCap(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api", Err: syscall.ECONNREFUSED}
	rec := newRecorder(func(key string, call int) (Result, error) {
		switch {
		case key == "outage" && call < 6:
			return Result{}, refused
		case key == "broken" && call < 6:
			return Result{}, errors.New("a bug")
		}
		return Result{}, nil
	})
	c := New(Options[string]{Name: "outage", Reconcile: rec.reconcile, RateLimiter: slowRetries(), UnavailableRetry: 20 * time.Millisecond})
	start(t, c, 1)
	c.Enqueue("outage")
	c.Enqueue("broken")
	eventually(t, "the key of the unreachable apiserver succeeds once it answers", func() bool { return rec.count("outage") == 6 })
	if n := rec.count("broken"); n != 1 {
		t.Errorf("a key failing for another reason was reconciled %d times, want 1 (the controller's backoff applies)", n)
	}
}

// A success forgets the backoff of every class, so a later conflict or
// outage starts from the shortest wait again.
func TestSuccessForgetsEveryBackoff(t *testing.T) {
	c := New(Options[string]{Name: "forget", Reconcile: newRecorder(func(string, int) (Result, error) { return Result{}, nil }).reconcile})
	for range 5 {
		c.retries.conflict.When("k")
		c.retries.unavailable.When("k")
	}
	c.forget("k")
	if n := c.retries.conflict.NumRequeues("k") + c.retries.unavailable.NumRequeues("k"); n != 0 {
		t.Errorf("after forget, %d requeues are still counted", n)
	}
}

// When a cluster answers again, RetryFailing reconciles at once the keys
// that wait out a backoff grown during the outage, and the next failure
// waits the shortest backoff again, not the grown one.
func TestRetryFailingResetsGrownBackoff(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	var outage atomic.Bool
	outage.Store(true)
	rec := newRecorder(func(string, int) (Result, error) {
		if outage.Load() {
			return Result{}, errors.New("the cluster does not answer the way we expect")
		}
		return Result{}, nil
	})
	c := New(Options[string]{
		Name: "recovery", Reconcile: rec.reconcile, Clock: clock,
		RateLimiter: workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Minute, time.Hour),
	})
	start(t, c, 1)
	c.Enqueue("p")
	// Failures 1, 2 and 3 grow the backoff to 1, 2 and 4 minutes.
	for call, wait := range []time.Duration{time.Minute, 2 * time.Minute} {
		eventually(t, "the key waits out its backoff", func() bool { return rec.count("p") == call+1 && delayed(clock) })
		clock.Step(wait)
	}
	eventually(t, "the key waits out a 4 minute backoff", func() bool { return rec.count("p") == 3 && delayed(clock) })

	// The cluster answers again but still fails once: the key is retried
	// at once, and then after the shortest backoff.
	c.RetryFailing()
	eventually(t, "the failing key is reconciled without waiting", func() bool { return rec.count("p") == 4 })
	outage.Store(false)
	// The 4 minute delay is still queued, so the clock cannot show when
	// the new one is: step a second at a time. A retry before a minute
	// would be early; one at 4 minutes or later would be the old delay.
	waited := stepUntil(t, clock, "the next retry", func() bool { return rec.count("p") == 5 })
	if waited < time.Minute || waited >= 4*time.Minute {
		t.Errorf("the retry after recovery came %v after the failure, want the shortest backoff, 1m", waited)
	}

	// A key that succeeded is not failing: RetryFailing leaves it alone.
	c.RetryFailing()
	time.Sleep(50 * time.Millisecond)
	if got := rec.count("p"); got != 5 {
		t.Errorf("a key in step was reconciled again by RetryFailing: %d reconciles, want 5", got)
	}
}
