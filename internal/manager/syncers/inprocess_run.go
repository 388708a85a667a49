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
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/serving"
	"github.com/kubeocean/kubeocean/internal/syncer"
)

// start runs a new syncer for binding in the background.
func (s *InProcess) start(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, rev string, failures int) {
	logger := klog.FromContext(s.base).WithValues("clusterBinding", klog.KObj(binding), "syncerRevision", rev)
	runCtx, cancel := context.WithCancel(klog.NewContext(s.base, logger))
	r := &run{binding: binding.DeepCopy(), revision: rev, failures: failures, cancel: cancel, done: make(chan struct{})}
	s.mu.Lock()
	s.runs[binding.Name] = r
	s.mu.Unlock()
	klog.FromContext(ctx).Info("Starting the syncer in-process", "syncerRevision", rev, "previousFailures", failures)
	s.wg.Go(func() { s.execute(runCtx, r) })
}

// execute runs one syncer until it fails or is stopped.
func (s *InProcess) execute(ctx context.Context, r *run) {
	err := s.runSyncer(ctx, r)
	stopped := ctx.Err() != nil
	if stopped {
		// Stopped on purpose; whatever it returned on the way out is no failure.
		err = nil
	} else if err == nil {
		err = errors.New("the syncer returned without being stopped")
	}
	r.err, r.stoppedAt = err, s.opts.Clock.Now()
	// Done before anyone is told, so that they see the run as ended.
	close(r.done)
	if stopped {
		// Normally stop forgets it; not when stop gave up waiting.
		s.forget(r)
		return
	}
	klog.FromContext(ctx).Error(err, "In-process syncer failed", "failures", s.failuresAfter(r))
	s.opts.Recorder.Eventf(r.binding, corev1.EventTypeWarning, kubeoceanv1alpha1.EventSyncerCrashed, "The syncer failed: %v", err)
	s.opts.OnChange(r.binding.Name)
}

// runSyncer sets one syncer up and runs it. A panic on this goroutine (its
// setup, the runnables' wiring) fails this syncer rather than the manager;
// panics in reconciles are already recovered by the controller framework.
func (s *InProcess) runSyncer(ctx context.Context, r *run) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the syncer panicked: %v", p)
		}
	}()
	proc, err := s.process(r.binding.Name)
	if err != nil {
		return err
	}
	opts := s.opts.Syncer
	opts.BindingName = r.binding.Name
	runnables, err := s.opts.Setup(opts)(ctx, proc)
	if err != nil {
		return err
	}
	s.wg.Go(func() { s.awaitReadiness(ctx, r, proc.Health) })
	return app.RunAll(ctx, runnables...)
}

// process is what one syncer gets of the manager: its own client (so its
// own rate limit) and readiness checks, the shared metrics, request counts
// and events. Its config is a copy of the manager's, so its requests to the
// virtual cluster are counted as the manager's are.
func (s *InProcess) process(name string) (*app.Process, error) {
	base := s.opts.Process
	config := rest.CopyConfig(base.Config)
	config.UserAgent = syncer.Component + "/" + name
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	options := *base.Options
	options.Component = syncer.Component
	// Every field of app.Process is set: the syncer may use any of them.
	return &app.Process{
		Options: &options, Config: config, Kube: kube,
		Registry: base.Registry, Metrics: base.Metrics, Requests: base.Requests, Auth: base.Auth,
		// A syncer's readiness must not become the manager's: one broken
		// physical cluster would take the manager out of its Service.
		Health:   serving.NewHealth(),
		Recorder: s.recorder,
	}, nil
}

// awaitReadiness polls the syncer's readiness checks until they pass once
// (synced caches stay synced), then tells the controller.
func (s *InProcess) awaitReadiness(ctx context.Context, r *run, health *serving.Health) {
	ticker := time.NewTicker(s.opts.ReadinessPoll)
	defer ticker.Stop()
	handler := health.Handler()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.done:
			return
		case <-ticker.C:
		}
		if ready(ctx, handler) {
			r.ready.Store(true)
			klog.FromContext(ctx).Info("In-process syncer is ready")
			s.opts.OnChange(r.binding.Name)
			return
		}
	}
}

// ready asks the syncer's /readyz through its handler, in memory. The
// checks log their failures, which are expected while starting, so they get
// a logger that discards.
func ready(ctx context.Context, handler http.Handler) bool {
	request := httptest.NewRequestWithContext(klog.NewContext(ctx, logr.Discard()), http.MethodGet, "/readyz", nil)
	response := httptest.NewRecorder()
	handler.ServeHTTP(response, request)
	return response.Code == http.StatusOK
}
