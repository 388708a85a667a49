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

package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/internal/events"
	"github.com/kubeocean/kubeocean/internal/leaderelection"
	"github.com/kubeocean/kubeocean/internal/serving"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Process is what a binary's setup function gets to build its controllers.
type Process struct {
	Options  *Options
	Config   *rest.Config
	Kube     kubernetes.Interface
	Registry *prometheus.Registry
	Metrics  *controller.Metrics
	// Requests counts the API requests of clients built from Config, and
	// of any other config the binary wraps with it.
	Requests *RequestCounter
	Health   *serving.Health
	Recorder record.EventRecorderLogger
	// Auth is the delegated authentication and authorization the
	// process's servers share; nil: each builds its own.
	Auth *serving.SharedAuth
}

// DelegatingAuth is the process's shared Auth or, when it has none, one
// of the caller's own, which the caller runs (Auth.Run).
func (p *Process) DelegatingAuth() (*serving.Auth, error) {
	if p.Auth != nil {
		return p.Auth.Get()
	}
	return serving.NewDelegatingAuth(p.Kube, "client-ca")
}

// Runnable is anything that runs until its context ends: a controller's
// Run with its worker count bound, an informer-driven loop, a server.
type Runnable struct {
	Name string
	Run  func(ctx context.Context) error
}

// Setup builds a binary's controllers once this process leads. It returns
// what to run; informers must be started by the returned runnables or by
// Setup itself with ctx.
type Setup func(ctx context.Context, p *Process) ([]Runnable, error)

// Run runs a binary until ctx ends: it serves metrics and health, waits for
// leadership when election is on, calls setup, runs what it returns and, on
// cancel, waits until all of it has stopped. An error from any runnable
// stops the others.
func Run(ctx context.Context, opts *Options, setup Setup) error {
	logger := klog.FromContext(ctx).WithValues("component", opts.Component)
	ctx = klog.NewContext(ctx, logger)
	opts.GC.Apply(logger, os.Getenv)

	config, err := opts.RESTConfig()
	if err != nil {
		return err
	}
	p := &Process{Options: opts, Config: config, Registry: serving.NewRegistry(), Health: serving.NewHealth()}
	p.Metrics = controller.NewMetrics(p.Registry)
	// Binaries run in the virtual cluster: their own cluster is "virtual".
	p.Requests = NewRequestCounter(p.Registry)
	p.Requests.Wrap(config, "virtual")
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	p.Kube = kube
	authCtx, stopAuth := context.WithCancel(ctx)
	defer stopAuth()
	p.Auth = serving.NewSharedAuth(authCtx, kube)
	if err := leaderelection.RegisterMetrics(p.Registry); err != nil {
		return err
	}
	if err := registerBuildInfo(p.Registry, opts.Component); err != nil {
		return err
	}
	recorder, stopRecorder := events.NewRecorder(ctx, kube, opts.Component)
	defer stopRecorder()
	p.Recorder = recorder

	election := opts.Election
	if election.Enabled {
		election.Healthz = leaderelection.NewHealthzAdaptor(leaderelection.DefaultHealthzTimeout)
		p.Health.AddHealthz(serving.CheckFrom(election.Healthz))
	}
	// The servers outlive the controllers: they stop once leadership ends
	// or ctx is cancelled, after the work has drained.
	serveCtx, stopServing := context.WithCancel(ctx)
	servers, err := startServers(serveCtx, opts.Serving, p)
	defer func() {
		stopServing()
		for _, s := range servers {
			if werr := s.Wait(); werr != nil {
				logger.Error(werr, "Server stopped with an error")
			}
		}
	}()
	if err != nil {
		return err
	}
	if !waitForAPIServer(ctx, kube.Discovery().RESTClient(), config.Host) {
		return nil // stopped before the API server answered
	}

	var runErr error
	err = leaderelection.Run(ctx, kube, election, func(ctx context.Context) {
		runErr = setupAndRun(ctx, p, setup)
	})
	return errors.Join(err, runErr)
}

func startServers(ctx context.Context, opts serving.Options, p *Process) ([]*serving.Server, error) {
	var handler http.Handler = serving.MetricsHandler(p.Registry)
	if p.Options.Profiling {
		mux := http.NewServeMux()
		mux.Handle("/metrics", handler)
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		handler = mux
	}
	metrics, err := startMetrics(ctx, opts, handler, p)
	if err != nil {
		return nil, fmt.Errorf("serving metrics: %w", err)
	}
	health, err := serving.Start(ctx, opts.HealthProbeBindAddress, p.Health.Handler())
	if err != nil {
		return []*serving.Server{metrics}, fmt.Errorf("serving health probes: %w", err)
	}
	return []*serving.Server{metrics, health}, nil
}

// startMetrics serves handler on the metrics address: plain, or with
// --metrics-secure over HTTPS to the callers that the process's own
// cluster authenticates and authorizes.
func startMetrics(ctx context.Context, opts serving.Options, handler http.Handler, p *Process) (*serving.Server, error) {
	if !opts.MetricsSecure || serving.Disabled(opts.MetricsBindAddress) {
		return serving.Start(ctx, opts.MetricsBindAddress, handler)
	}
	auth, err := p.DelegatingAuth()
	if err != nil {
		return nil, err
	}
	var certFile, keyFile string
	if opts.MetricsCertDir != "" {
		certFile = filepath.Join(opts.MetricsCertDir, serving.CertFileName)
		keyFile = filepath.Join(opts.MetricsCertDir, serving.KeyFileName)
	}
	cert, err := serving.NewCertificate("metrics", certFile, keyFile, p.Options.Component)
	if err != nil {
		return nil, err
	}
	return serving.StartSecure(ctx, opts.MetricsBindAddress, handler, auth, cert)
}

func setupAndRun(ctx context.Context, p *Process, setup Setup) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runnables, err := setup(ctx, p)
	if err != nil {
		return fmt.Errorf("setting up %s: %w", p.Options.Component, err)
	}
	return RunAll(ctx, runnables...)
}

// RunAll runs every runnable until ctx ends or one of them fails, then
// cancels the rest and waits for all of them.
func RunAll(ctx context.Context, runnables ...Runnable) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger := klog.FromContext(ctx)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, r := range runnables {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil {
				logger.Error(err, "Stopped with an error", "runnable", r.Name)
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", r.Name, err))
				mu.Unlock()
				cancel()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ControllerRunnable binds a controller's worker count.
func ControllerRunnable[K comparable](c *controller.Controller[K], workers int) Runnable {
	return Runnable{Name: c.Name(), Run: func(ctx context.Context) error { return c.Run(ctx, workers) }}
}
