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
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/syncer"
)

// Defaults of InProcessOptions.
const (
	DefaultRestartBase   = 10 * time.Second
	DefaultRestartMax    = 5 * time.Minute
	DefaultReadinessPoll = 500 * time.Millisecond
	DefaultStopTimeout   = 30 * time.Second
)

// InProcessOptions configure InProcess.
type InProcessOptions struct {
	// Process is the manager's process: the syncers use its client config
	// (each with its own client and rate limit), its metrics and registry.
	Process *app.Process
	// Syncer holds the per-syncer settings; BindingName is set per binding.
	Syncer syncer.Options
	// Recorder records events on bindings.
	Recorder record.EventRecorder
	// OnChange is called with a binding's name when its syncer becomes
	// ready or stops by itself, so its status is updated.
	OnChange func(bindingName string)
	// Setup builds a syncer; nil means syncer.Setup. Tests substitute it.
	Setup func(syncer.Options) app.Setup
	// Clock stamps failures; nil means the real clock.
	Clock clock.PassiveClock
	// RestartBase and RestartMax bound the delay before a failed syncer is
	// started again: base, doubling per consecutive failure, up to max.
	RestartBase, RestartMax time.Duration
	// ReadinessPoll is how often a starting syncer's readiness is checked.
	ReadinessPoll time.Duration
	// StopTimeout bounds the wait for a syncer to stop.
	StopTimeout time.Duration
}

// InProcess runs syncers as goroutines of the manager. Create it with
// NewInProcess and run its Run, which stops every syncer on shutdown.
type InProcess struct {
	opts     InProcessOptions
	base     context.Context
	stopAll  context.CancelFunc
	recorder record.EventRecorderLogger
	stopRec  func()

	mu   sync.Mutex
	runs map[string]*run
	wg   sync.WaitGroup
}

// run is one start of one syncer.
type run struct {
	binding  *kubeoceanv1alpha1.ClusterBinding
	revision string
	// failures is how many runs in a row failed before this one.
	failures int
	cancel   context.CancelFunc
	done     chan struct{}
	// ready is set once the syncer's readiness checks passed.
	ready atomic.Bool
	// Set before done is closed.
	err       error
	stoppedAt time.Time
}

var _ Runner = &InProcess{}

// NewInProcess returns a runner whose syncers run until ctx ends or Run
// returns.
func NewInProcess(ctx context.Context, opts InProcessOptions) (*InProcess, error) {
	if opts.Process == nil || opts.Recorder == nil || opts.OnChange == nil {
		return nil, errors.New("in-process syncers: options Process, Recorder and OnChange are required")
	}
	if opts.Setup == nil {
		opts.Setup = syncer.Setup
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.RestartBase = orDefault(opts.RestartBase, DefaultRestartBase)
	opts.RestartMax = orDefault(opts.RestartMax, DefaultRestartMax)
	opts.ReadinessPoll = orDefault(opts.ReadinessPoll, DefaultReadinessPoll)
	opts.StopTimeout = orDefault(opts.StopTimeout, DefaultStopTimeout)
	base, stopAll := context.WithCancel(ctx)
	// The syncers' own events (on virtual nodes and pods) carry the
	// syncer's name, as they would from a syncer Deployment.
	recorder, stopRec := events.NewRecorder(base, opts.Process.Kube, syncer.Component)
	return &InProcess{opts: opts, base: base, stopAll: stopAll, recorder: recorder, stopRec: stopRec, runs: map[string]*run{}}, nil
}

func orDefault(d, fallback time.Duration) time.Duration {
	if d <= 0 {
		return fallback
	}
	return d
}

// Run waits until ctx ends, then stops every syncer and waits for them.
func (s *InProcess) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-s.base.Done():
	}
	klog.FromContext(ctx).Info("Stopping in-process syncers", "running", s.Running())
	s.stopAll()
	s.wg.Wait()
	s.stopRec()
	return nil
}

// revision identifies what a syncer was started from: the binding's spec
// generation and its kubeconfig.
func revision(binding *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) string {
	return strconv.FormatInt(binding.Generation, 10) + "/" + kubeconfigHash
}

// Ensure implements Runner.
func (s *InProcess) Ensure(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, kubeconfigHash string) (State, error) {
	if s.base.Err() != nil {
		return State{}, errors.New("in-process syncers are shutting down")
	}
	rev := revision(binding, kubeconfigHash)
	r := s.get(binding.Name)
	switch {
	case r == nil:
		s.start(ctx, binding, rev, 0)
		s.opts.Recorder.Event(binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventSyncerStarted, "Started the syncer in the manager's process.")
	case r.revision != rev:
		if err := s.stop(ctx, binding.Name, r); err != nil {
			return State{}, err
		}
		s.start(ctx, binding, rev, 0)
		s.opts.Recorder.Event(binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventSyncerRestarted,
			"Restarted the syncer in the manager's process: the binding's spec or kubeconfig changed.")
	case isDone(r):
		now := s.opts.Clock.Now()
		if retryAt := s.retryAt(r); now.Before(retryAt) {
			return s.failedState(r, retryAt.Sub(now)), nil
		}
		s.start(ctx, binding, rev, s.failuresAfter(r))
		s.opts.Recorder.Event(binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventSyncerRestarted, "Restarted the syncer in the manager's process after it failed.")
	}
	state, _ := s.Observe(binding)
	return state, nil
}

// Observe implements Runner.
func (s *InProcess) Observe(binding *kubeoceanv1alpha1.ClusterBinding) (State, bool) {
	r := s.get(binding.Name)
	if r == nil {
		return State{}, false
	}
	if isDone(r) {
		return s.failedState(r, max(s.retryAt(r).Sub(s.opts.Clock.Now()), 0)), true
	}
	if r.ready.Load() {
		return State{Phase: PhaseReady, Reason: kubeoceanv1alpha1.ReasonSyncerRunning,
			Message: "The syncer runs in the manager's process and its caches are synced."}, true
	}
	return State{Phase: PhaseStarting, Reason: kubeoceanv1alpha1.ReasonSyncerStarting,
		Message: "The syncer is starting in the manager's process: waiting for its caches to sync."}, true
}

// Remove implements Runner.
func (s *InProcess) Remove(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding) (bool, error) {
	r := s.get(binding.Name)
	if r == nil {
		return true, nil
	}
	if err := s.stop(ctx, binding.Name, r); err != nil {
		return false, err
	}
	s.opts.Recorder.Event(r.binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventSyncerStopped, "Stopped the syncer in the manager's process.")
	return true, nil
}

// HasSynced implements Runner; the runner reads no cache.
func (s *InProcess) HasSynced() bool { return true }

// Running implements Runner.
func (s *InProcess) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.runs {
		if !isDone(r) {
			n++
		}
	}
	return n
}

func (s *InProcess) get(name string) *run {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[name]
}

func isDone(r *run) bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// failuresAfter is the failure count of the run after r: a syncer that got
// ready before it failed starts counting again.
func (s *InProcess) failuresAfter(r *run) int {
	if r.ready.Load() {
		return 1
	}
	return r.failures + 1
}

// retryAt is when a failed run may be started again.
func (s *InProcess) retryAt(r *run) time.Time {
	delay := s.opts.RestartBase
	for i := 1; i < s.failuresAfter(r) && delay < s.opts.RestartMax; i++ {
		delay *= 2
	}
	return r.stoppedAt.Add(min(delay, s.opts.RestartMax))
}

func (s *InProcess) failedState(r *run, retryAfter time.Duration) State {
	return State{
		Phase:  PhaseFailed,
		Reason: kubeoceanv1alpha1.ReasonSyncerFailed,
		// An absolute time keeps the message, and so the status, stable
		// until the restart.
		Message:    fmt.Sprintf("The syncer stopped: %v. Restarting it at %s.", r.err, s.retryAt(r).UTC().Format(time.RFC3339)),
		RetryAfter: retryAfter,
	}
}

// stop cancels r and waits for it to end, then forgets it.
func (s *InProcess) stop(ctx context.Context, name string, r *run) error {
	r.cancel()
	timer := time.NewTimer(s.opts.StopTimeout)
	defer timer.Stop()
	select {
	case <-r.done:
	case <-timer.C:
		return fmt.Errorf("the syncer of %s did not stop within %v", name, s.opts.StopTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	s.forget(r)
	return nil
}

// forget drops r unless another run of its binding replaced it.
func (s *InProcess) forget(r *run) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runs[r.binding.Name] == r {
		delete(s.runs, r.binding.Name)
	}
}
