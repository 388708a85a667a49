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
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

// recorder counts reconciles per key and lets a test script each call.
type recorder struct {
	mu    sync.Mutex
	calls map[string]int
	fn    func(key string, call int) (Result, error)
}

func newRecorder(fn func(key string, call int) (Result, error)) *recorder {
	return &recorder{calls: map[string]int{}, fn: fn}
}

func (r *recorder) reconcile(_ context.Context, key string) (Result, error) {
	r.mu.Lock()
	r.calls[key]++
	call := r.calls[key]
	r.mu.Unlock()
	return r.fn(key, call)
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

func fastRetries() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond)
}

// start runs c with the given workers and returns a stop function that
// cancels it and waits for Run to return.
func start(t *testing.T, c *Controller[string], workers int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, workers) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Run did not return after cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 5*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("timed out waiting until %s", what)
	}
}

// delayed reports whether a key waits on the fake clock. The queue's
// heartbeat ticker is always one of the clock's waiters, so a key's delay
// is the second: it exists only once the queue has taken the key's ready
// time from the clock, and a Step from then on is measured from that time.
func delayed(clock *clocktesting.FakeClock) bool { return clock.Waiters() > 1 }

// stepUntil steps the fake clock a second at a time until cond holds, and
// returns how far it stepped.
func stepUntil(t *testing.T, clock *clocktesting.FakeClock, what string, cond func() bool) time.Duration {
	t.Helper()
	var stepped time.Duration
	eventually(t, what, func() bool {
		if cond() {
			return true
		}
		clock.Step(time.Second)
		stepped += time.Second
		return false
	})
	return stepped
}

func TestReconcileOutcomes(t *testing.T) {
	reg := prometheus.NewRegistry()
	metrics := NewMetrics(reg)
	rec := newRecorder(func(key string, call int) (Result, error) {
		switch key {
		case "flaky":
			if call < 3 {
				return Result{}, errors.New("transient")
			}
		case "broken-spec":
			return Result{}, Terminal(errors.New("spec.clusterID is invalid"))
		case "panics":
			if call == 1 {
				panic("boom")
			}
		}
		return Result{}, nil
	})
	c := New(Options[string]{Name: "outcomes", Reconcile: rec.reconcile, RateLimiter: fastRetries(), Metrics: metrics})
	start(t, c, 2)
	for _, key := range []string{"ok", "flaky", "broken-spec", "panics"} {
		c.Enqueue(key)
	}

	eventually(t, "flaky succeeds on its third try", func() bool { return rec.count("flaky") == 3 })
	eventually(t, "the panicking key is retried and succeeds", func() bool { return rec.count("panics") == 2 })
	eventually(t, "ok reconciled", func() bool { return rec.count("ok") == 1 })
	// Give a wrongly retried key time to show up.
	time.Sleep(50 * time.Millisecond)
	if got := rec.count("broken-spec"); got != 1 {
		t.Errorf("terminal error reconciled %d times, want 1 (no retry)", got)
	}
	if got := rec.count("flaky"); got != 3 {
		t.Errorf("flaky reconciled %d times after success, want 3", got)
	}
	if n := c.queue.NumRequeues("flaky"); n != 0 {
		t.Errorf("flaky still has %d requeues after success; Forget was not called", n)
	}

	checks := map[string]float64{
		"success":        3, // ok, flaky on its third try, panics on its retry
		"error":          3, // flaky twice, the panic once
		"terminal_error": 1,
	}
	for result, want := range checks {
		if got := testutil.ToFloat64(metrics.reconciles.WithLabelValues("outcomes", result)); got != want {
			t.Errorf("reconcile_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	if got := testutil.ToFloat64(metrics.panics.WithLabelValues("outcomes")); got != 1 {
		t.Errorf("reconcile_panics_total = %v, want 1", got)
	}
	if got := testutil.ToFloat64(metrics.queue.adds.WithLabelValues("outcomes")); got < 4 {
		t.Errorf("workqueue adds_total = %v, want at least 4", got)
	}
}

func TestRequeueAfterUsesTheClock(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	rec := newRecorder(func(string, int) (Result, error) { return RequeueAfter(time.Minute), nil })
	c := New(Options[string]{Name: "requeue", Reconcile: rec.reconcile, Clock: clock})
	start(t, c, 1)
	c.Enqueue("window")

	eventually(t, "first reconcile", func() bool { return rec.count("window") == 1 })
	eventually(t, "the requeue is waiting on the clock", func() bool { return delayed(clock) })
	clock.Step(59 * time.Second)
	time.Sleep(20 * time.Millisecond)
	if got := rec.count("window"); got != 1 {
		t.Fatalf("reconciled %d times before the minute passed, want 1", got)
	}
	clock.Step(time.Second)
	eventually(t, "second reconcile after a minute", func() bool { return rec.count("window") == 2 })
}

func TestRunWaitsForCaches(t *testing.T) {
	var synced atomic.Bool
	rec := newRecorder(func(string, int) (Result, error) { return Result{}, nil })
	c := New(Options[string]{Name: "waits", Reconcile: rec.reconcile, HasSynced: []cache.InformerSynced{synced.Load}})
	c.Enqueue("a")
	start(t, c, 1)

	time.Sleep(150 * time.Millisecond)
	if got := rec.count("a"); got != 0 {
		t.Fatalf("reconciled %d times before caches synced", got)
	}
	synced.Store(true)
	eventually(t, "reconcile after sync", func() bool { return rec.count("a") == 1 })
}

// A shutdown before the caches sync (the process stops, or the syncer
// restarts for a new node selector) is not an error of the controller: it
// returns nil, reconciles nothing and shuts its queue down.
func TestRunStopsQuietlyWhenShutDownBeforeCachesSync(t *testing.T) {
	var reconciled atomic.Int32
	c := New(Options[string]{Name: "never", Reconcile: func(context.Context, string) (Result, error) {
		reconciled.Add(1)
		return Result{}, nil
	}, HasSynced: []cache.InformerSynced{func() bool { return false }}})
	c.Enqueue("a")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Run(ctx, 1); err != nil {
		t.Fatalf("Run returned %v for a shutdown before the caches synced, want nil", err)
	}
	if n := reconciled.Load(); n != 0 {
		t.Fatalf("reconciled %d times although the caches never synced", n)
	}
	if !c.queue.ShuttingDown() {
		t.Fatal("the queue is still open after Run returned")
	}
}

func TestShutdownDrainsWorkInFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var finished atomic.Bool
	c := New(Options[string]{Name: "drain", Reconcile: func(context.Context, string) (Result, error) {
		close(entered)
		<-release
		finished.Store(true)
		return Result{}, nil
	}})
	stop := start(t, c, 1)
	c.Enqueue("slow")
	<-entered

	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Run returned while a reconcile was still in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-stopped
	if !finished.Load() {
		t.Fatal("the reconcile in flight did not finish")
	}
}

func TestWorkersRunConcurrently(t *testing.T) {
	var running, peak atomic.Int32
	gate := make(chan struct{})
	c := New(Options[string]{Name: "parallel", Reconcile: func(context.Context, string) (Result, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-gate
		running.Add(-1)
		return Result{}, nil
	}})
	start(t, c, 3)
	for _, k := range []string{"a", "b", "c"} {
		c.Enqueue(k)
	}
	eventually(t, "three reconciles at once", func() bool { return peak.Load() == 3 })
	close(gate)
}

func TestTerminal(t *testing.T) {
	base := errors.New("bad spec")
	err := Terminal(base)
	if !IsTerminal(err) || !errors.Is(err, base) {
		t.Fatalf("Terminal(%v) is not terminal or lost its cause", base)
	}
	if IsTerminal(base) || Terminal(nil) != nil {
		t.Fatal("plain errors and nil must not be terminal")
	}
	wrapped := errors.Join(errors.New("context"), err)
	if !IsTerminal(wrapped) {
		t.Fatal("a wrapped terminal error must stay terminal")
	}
}

func TestWatchWaitsForTheHandler(t *testing.T) {
	source := fcache.NewFakeControllerSource()
	source.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}})
	informer := cache.NewSharedIndexInformer(source, &corev1.ConfigMap{}, 0, cache.Indexers{})
	rec := newRecorder(func(string, int) (Result, error) { return Result{}, nil })
	c := New(Options[string]{Name: "watch", Reconcile: rec.reconcile})
	err := c.Watch(informer, Handler[*corev1.ConfigMap, string]{Enqueue: c.Enqueue,
		Keys: func(cm *corev1.ConfigMap) []string { return []string{cm.Name} }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start(t, c, 1)
	go informer.RunWithContext(ctx)
	eventually(t, "the object from the initial list is reconciled", func() bool { return rec.count("a") == 1 })
}
