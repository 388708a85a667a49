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

package syncers

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/serving"
	"github.com/kubeocean/kubeocean/internal/syncer"
)

// fakeSyncer stands in for syncer.Setup: each start registers a readiness
// check that passes once synced is set, and runs until stopped or until
// fail is sent an error.
type fakeSyncer struct {
	mu       sync.Mutex
	starts   []syncer.Options
	stopped  atomic.Int32
	synced   atomic.Bool
	setupErr error
	fail     chan error
}

func (f *fakeSyncer) setup(opts syncer.Options) app.Setup {
	return func(ctx context.Context, p *app.Process) ([]app.Runnable, error) {
		f.mu.Lock()
		f.starts = append(f.starts, opts)
		err := f.setupErr
		f.mu.Unlock()
		if err != nil {
			return nil, err
		}
		p.Health.AddReadyz(serving.Check{Name: "informers-synced-" + opts.BindingName, Fn: func(*http.Request) error {
			if !f.synced.Load() {
				return errors.New("not synced")
			}
			return nil
		}})
		return []app.Runnable{{Name: "work", Run: func(ctx context.Context) error {
			defer f.stopped.Add(1)
			select {
			case <-ctx.Done():
				return nil
			case err := <-f.fail:
				return err
			}
		}}}, nil
	}
}

func (f *fakeSyncer) startCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.starts)
}

type inProcessFixture struct {
	t       *testing.T
	ctx     context.Context
	syncer  *fakeSyncer
	clock   *clocktesting.FakeClock
	runner  *InProcess
	changed chan string
	cancel  context.CancelFunc
	done    chan struct{}
}

func newInProcessFixture(t *testing.T) *inProcessFixture {
	t.Helper()
	f := &inProcessFixture{t: t, syncer: &fakeSyncer{fail: make(chan error, 1)}, clock: clocktesting.NewFakeClock(time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)),
		changed: make(chan string, 20), done: make(chan struct{})}
	_, ctx := ktesting.NewTestContext(t)
	ctx, f.cancel = context.WithCancel(ctx)
	f.ctx = ctx
	process := &app.Process{Options: app.NewOptions("kubeocean-manager"), Config: &rest.Config{Host: "http://127.0.0.1:1"}, Kube: fake.NewClientset()}
	var err error
	f.runner, err = NewInProcess(ctx, InProcessOptions{
		Process: process, Syncer: syncer.Options{Workers: 3}, Recorder: record.NewFakeRecorder(50),
		OnChange: func(name string) { f.changed <- name }, Setup: f.syncer.setup, Clock: f.clock,
		ReadinessPoll: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(f.done)
		if err := f.runner.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(func() {
		f.cancel()
		select {
		case <-f.done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return f
}

func (f *inProcessFixture) ensure(b *kubeoceanv1alpha1.ClusterBinding, hash string) State {
	f.t.Helper()
	state, err := f.runner.Ensure(f.ctx, b, hash)
	if err != nil {
		f.t.Fatalf("Ensure: %v", err)
	}
	return state
}

func (f *inProcessFixture) waitChanged(name string) {
	f.t.Helper()
	select {
	case got := <-f.changed:
		if got != name {
			f.t.Fatalf("OnChange(%q), want %q", got, name)
		}
	case <-time.After(10 * time.Second):
		f.t.Fatalf("no OnChange(%q)", name)
	}
}

func (f *inProcessFixture) waitFor(what string, cond func() bool) {
	f.t.Helper()
	if err := wait.PollUntilContextTimeout(f.ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}); err != nil {
		f.t.Fatalf("timed out waiting until %s", what)
	}
}

func TestInProcessStartsAndReportsReadiness(t *testing.T) {
	f := newInProcessFixture(t)
	b := testBinding()

	if state := f.ensure(b, "h1"); state.Phase != PhaseStarting {
		t.Fatalf("state after start = %+v", state)
	}
	f.waitFor("the syncer is set up", func() bool { return f.syncer.startCount() == 1 })
	if state, _ := f.runner.Observe(b); state.Phase != PhaseStarting {
		t.Fatalf("state before its caches sync = %+v", state)
	}
	f.syncer.synced.Store(true)
	f.waitChanged(b.Name)

	if state := f.ensure(b, "h1"); state.Phase != PhaseReady || state.Reason != kubeoceanv1alpha1.ReasonSyncerRunning {
		t.Fatalf("state once synced = %+v", state)
	}
	if got := f.syncer.startCount(); got != 1 {
		t.Errorf("started %d times, want once", got)
	}
	if f.syncer.starts[0].BindingName != b.Name || f.syncer.starts[0].Workers != 3 {
		t.Errorf("syncer options = %+v", f.syncer.starts[0])
	}
	if f.runner.Running() != 1 {
		t.Errorf("Running = %d", f.runner.Running())
	}
}

func TestInProcessRestartsOnChange(t *testing.T) {
	f := newInProcessFixture(t)
	b := testBinding()
	f.ensure(b, "h1")
	f.waitFor("the syncer is set up", func() bool { return f.syncer.startCount() == 1 })

	f.ensure(b, "h2") // the kubeconfig changed
	f.waitFor("the syncer restarted", func() bool { return f.syncer.startCount() == 2 && f.syncer.stopped.Load() == 1 })

	changed := b.DeepCopy()
	changed.Generation = 2
	f.ensure(changed, "h2")
	f.waitFor("the syncer restarted again", func() bool { return f.syncer.startCount() == 3 && f.syncer.stopped.Load() == 2 })
	if f.runner.Running() != 1 {
		t.Errorf("Running = %d, want 1", f.runner.Running())
	}
}

func TestInProcessRestartsFailedSyncerWithBackoff(t *testing.T) {
	f := newInProcessFixture(t)
	b := testBinding()
	f.ensure(b, "h1")
	f.waitFor("the syncer is set up", func() bool { return f.syncer.startCount() == 1 })

	f.syncer.fail <- errors.New("physical cluster gone")
	f.waitChanged(b.Name)

	state := f.ensure(b, "h1")
	if state.Phase != PhaseFailed || !strings.Contains(state.Message, "physical cluster gone") || state.RetryAfter != DefaultRestartBase {
		t.Fatalf("state after the failure = %+v", state)
	}
	if f.syncer.startCount() != 1 {
		t.Fatal("restarted before the backoff")
	}
	f.clock.Step(DefaultRestartBase)
	if state := f.ensure(b, "h1"); state.Phase != PhaseStarting {
		t.Fatalf("state after the backoff = %+v", state)
	}
	f.waitFor("the syncer restarted", func() bool { return f.syncer.startCount() == 2 })

	// A second failure in a row waits twice as long.
	f.syncer.fail <- errors.New("still gone")
	f.waitChanged(b.Name)
	if state := f.ensure(b, "h1"); state.RetryAfter != 2*DefaultRestartBase {
		t.Fatalf("state after the second failure = %+v", state)
	}
}

func TestInProcessSetupFailureIsReported(t *testing.T) {
	f := newInProcessFixture(t)
	f.syncer.setupErr = errors.New("reading ClusterBinding: not found")
	b := testBinding()
	f.ensure(b, "h1")
	f.waitChanged(b.Name)
	state, ok := f.runner.Observe(b)
	if !ok || state.Phase != PhaseFailed || !strings.Contains(state.Message, "not found") {
		t.Fatalf("Observe = %+v, %v", state, ok)
	}
}

func TestInProcessRemoveAndShutdown(t *testing.T) {
	f := newInProcessFixture(t)
	a, b := testBinding(), testBinding()
	b.Name = "worker-2"
	f.ensure(a, "h")
	f.ensure(b, "h")
	f.waitFor("both syncers are set up", func() bool { return f.syncer.startCount() == 2 })

	if gone, err := f.runner.Remove(f.ctx, a); !gone || err != nil {
		t.Fatalf("Remove = %v, %v", gone, err)
	}
	if _, ok := f.runner.Observe(a); ok {
		t.Error("a removed syncer is still observed")
	}
	if gone, err := f.runner.Remove(f.ctx, a); !gone || err != nil {
		t.Fatalf("Remove of a stopped syncer = %v, %v", gone, err)
	}
	f.cancel()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	if got := f.syncer.stopped.Load(); got != 2 {
		t.Errorf("%d syncers stopped, want 2", got)
	}
	if _, err := f.runner.Ensure(context.Background(), a, "h"); err == nil {
		t.Error("Ensure after shutdown started a syncer")
	}
}
