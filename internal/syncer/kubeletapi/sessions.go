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

package kubeletapi

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// DefaultStreamIdleTimeout closes an exec, attach or port-forward stream
// that carried no byte either way for this long. It is the default of the
// kubelet's own --streaming-connection-idle-timeout
// (KubeletConfiguration.streamingConnectionIdleTimeout, 4h0m0s), so a
// session through a virtual node lasts as long as one through a real node.
// Like the kubelet's (spdystream counts every frame), any traffic keeps a
// stream open, pings included.
const DefaultStreamIdleTimeout = 4 * time.Hour

// Why a stream was closed by the server, the values of the reason label of
// kubeocean_kubelet_api_streams_closed_total.
const (
	closedIdle    = "idle"
	closedStopped = "listener-stopped"
)

// sessions are the hijacked connections (exec, attach, port-forward) of
// one listener. http.Server.Close does not close a connection once a
// handler has taken it over, so the listener closes them here when it
// stops, and waits for their handlers.
type sessions struct {
	idleTimeout time.Duration
	metrics     *Metrics

	mu     sync.Mutex
	closed bool
	conns  map[*sessionConn]struct{}
	// serving counts the stream handlers running, from before their
	// connection is taken over until they return.
	serving sync.WaitGroup
}

func newSessions(idleTimeout time.Duration, metrics *Metrics) *sessions {
	if idleTimeout <= 0 {
		idleTimeout = DefaultStreamIdleTimeout
	}
	return &sessions{idleTimeout: idleTimeout, metrics: metrics, conns: map[*sessionConn]struct{}{}}
}

// begin registers a stream handler; false once the listener is stopping,
// when the handler must not start a stream. end is called when it returns.
func (s *sessions) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.serving.Add(1)
	return true
}

func (s *sessions) end() { s.serving.Done() }

// track keeps conn until it is closed, and closes it when idle. A
// connection taken over while the listener stops is closed at once.
func (s *sessions) track(conn net.Conn, logger logr.Logger) net.Conn {
	c := &sessionConn{Conn: conn, sessions: s, logger: logger}
	c.touch()
	c.mu.Lock()
	c.idle = time.AfterFunc(s.idleTimeout, c.checkIdle)
	c.mu.Unlock()
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.conns[c] = struct{}{}
	}
	s.mu.Unlock()
	if closed {
		_ = c.shutdown(closedStopped)
	}
	return c
}

// closeAll closes every connection and waits until their handlers have
// returned. Later streams are refused (begin) or closed (track).
func (s *sessions) closeAll() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*sessionConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.shutdown(closedStopped)
	}
	s.serving.Wait()
}

func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// sessionConn is a taken-over connection that records when it last
// carried a byte.
type sessionConn struct {
	net.Conn
	sessions *sessions
	logger   logr.Logger
	// lastActive is the time of the last read or write, in Unix
	// nanoseconds: an atomic store per read and write, where resetting a
	// timer each time would take a lock.
	lastActive atomic.Int64
	closed     atomic.Bool

	mu   sync.Mutex
	idle *time.Timer
}

func (c *sessionConn) touch() { c.lastActive.Store(time.Now().UnixNano()) }

func (c *sessionConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

func (c *sessionConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.touch()
	}
	return n, err
}

// checkIdle runs when the idle timeout may have passed: it closes the
// connection if it did, or looks again when it would.
func (c *sessionConn) checkIdle() {
	if c.closed.Load() {
		return
	}
	idle := time.Since(time.Unix(0, c.lastActive.Load()))
	if idle < c.sessions.idleTimeout {
		c.mu.Lock()
		c.idle.Reset(c.sessions.idleTimeout - idle)
		c.mu.Unlock()
		return
	}
	c.logger.Info("Closing an idle stream", "idleFor", idle.Round(time.Millisecond), "idleTimeout", c.sessions.idleTimeout)
	_ = c.shutdown(closedIdle)
}

// Close is the handler's: the stream ended.
func (c *sessionConn) Close() error { return c.shutdown("") }

// shutdown closes the connection once; reason, when set, says why the
// server closed it (the handler then sees its copies end and returns).
func (c *sessionConn) shutdown(reason string) error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	if reason != "" {
		c.sessions.metrics.streamsClosed.WithLabelValues(reason).Inc()
	}
	err := c.Conn.Close()
	c.mu.Lock()
	c.idle.Stop()
	c.mu.Unlock()
	c.sessions.mu.Lock()
	delete(c.sessions.conns, c)
	c.sessions.mu.Unlock()
	return err
}

// sessionWriter hands the connection over to the stream proxy tracked by
// sessions.
type sessionWriter struct {
	http.ResponseWriter
	sessions *sessions
	logger   logr.Logger
}

func (w sessionWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hijacker, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("response writer %T cannot be hijacked", w.ResponseWriter)
	}
	conn, rw, err := hijacker.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return w.sessions.track(conn, w.logger), rw, nil
}

func (w sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
