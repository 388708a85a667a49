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

package serving

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

const (
	// ShutdownTimeout bounds how long in-flight requests may take to finish
	// once the server is asked to stop.
	ShutdownTimeout = 10 * time.Second
	// readHeaderTimeout stops slow clients from holding connections open forever.
	readHeaderTimeout = 10 * time.Second
)

// Disabled reports whether addr switches a server off.
func Disabled(addr string) bool {
	return addr == "" || addr == "0"
}

// Serve listens on addr and serves h until ctx is done, then shuts down
// gracefully. A listen failure is returned at once so a port clash fails the
// process start clearly. A disabled address returns nil immediately.
func Serve(ctx context.Context, addr string, h http.Handler) error {
	server, err := Start(ctx, addr, h)
	if err != nil {
		return err
	}
	return server.Wait()
}

// Server is an HTTP server started by Start.
type Server struct {
	addr   string
	scheme string
	done   chan struct{}
	err    error
}

// Start listens on addr synchronously and serves h in the background until
// ctx is done. Unlike Serve it lets the caller check the listen error and then
// carry on, collecting the outcome later with Wait.
func Start(ctx context.Context, addr string, h http.Handler) (*Server, error) {
	return start(ctx, addr, h, nil)
}

// StartSecure is Start over TLS with cert, serving h only to the callers
// auth lets through (see Protect). The server keeps cert's files and
// auth's client CA current while it runs.
func StartSecure(ctx context.Context, addr string, h http.Handler, auth *Auth, cert *Certificate) (*Server, error) {
	return start(ctx, addr, Protect(h, auth), cert.TLSConfig(), cert.Run, auth.Run)
}

// start serves h on addr, over TLS when tlsConfig is set, and runs each of
// background as long as the server.
func start(ctx context.Context, addr string, h http.Handler, tlsConfig *tls.Config, background ...func(context.Context)) (*Server, error) {
	if Disabled(addr) {
		done := make(chan struct{})
		close(done)
		return &Server{done: done}, nil
	}
	var listenConfig net.ListenConfig
	listener, err := listenConfig.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %q: %w", addr, err)
	}
	httpServer := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		// Requests inherit the logger but not the cancellation, so a shutdown
		// lets in-flight requests finish instead of aborting them.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	scheme := "http"
	if tlsConfig != nil {
		listener = tls.NewListener(listener, tlsConfig)
		scheme = "https"
	}
	server := &Server{addr: listener.Addr().String(), scheme: scheme, done: make(chan struct{})}
	go server.run(ctx, httpServer, listener, background)
	return server, nil
}

// Addr is the address the server listens on (useful with port 0), or "" when disabled.
func (s *Server) Addr() string { return s.addr }

// Done is closed once the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// Wait blocks until the server has stopped and returns why, nil for a clean
// shutdown.
func (s *Server) Wait() error {
	<-s.done
	return s.err
}

func (s *Server) run(ctx context.Context, httpServer *http.Server, listener net.Listener, background []func(context.Context)) {
	defer close(s.done)
	logger := klog.FromContext(ctx).WithValues("address", s.addr, "scheme", s.scheme)
	logger.Info("Serving HTTP")

	var wg sync.WaitGroup
	defer wg.Wait()
	backgroundCtx, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	for _, f := range background {
		wg.Go(func() { f(backgroundCtx) })
	}

	serveErr := make(chan error, 1)
	go func() { serveErr <- httpServer.Serve(listener) }()
	select {
	case err := <-serveErr:
		s.err = fmt.Errorf("serving on %s: %w", s.addr, err)
		logger.Error(err, "HTTP server stopped unexpectedly")
		return
	case <-ctx.Done():
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		s.err = fmt.Errorf("shutting down server on %s: %w", s.addr, err)
		_ = httpServer.Close()
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) && s.err == nil {
		s.err = fmt.Errorf("serving on %s: %w", s.addr, err)
	}
	logger.Info("Stopped serving HTTP")
}
