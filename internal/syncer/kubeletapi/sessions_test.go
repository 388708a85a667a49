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
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
)

// echoBackend is a physical apiserver whose exec upgrades and echoes; it
// counts the upgraded connections still open.
type echoBackend struct {
	*httptest.Server
	open atomic.Int32
}

func newEchoBackend(t *testing.T) *echoBackend {
	b := &echoBackend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, rw, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		b.open.Add(1)
		defer b.open.Add(-1)
		defer func() { _ = conn.Close() }()
		_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
		_ = rw.Flush()
		_, _ = io.Copy(conn, rw)
	}))
	t.Cleanup(b.Close)
	return b
}

// testServer is a Server running for one virtual node, testNode, with
// the pod a/web on it.
type testServer struct {
	virtual *fake.Clientset
	backend *echoBackend
	metrics *Metrics
	addr    string
	cancel  context.CancelFunc
	// returned is closed when Run has returned.
	returned chan struct{}
}

func startTestServer(t *testing.T, idleTimeout time.Duration) *testServer {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := free.Addr().(*net.TCPAddr).Port
	_ = free.Close()
	ports, err := NewPortAllocator(port, port)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := NewServingCertificate("", "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	web := virtualPod("a", "web", testNode, true)
	virtualPods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	physicalPods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	_ = virtualPods.Add(web)
	_ = physicalPods.Add(physicalTwin(web))

	ts := &testServer{virtual: fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode}}),
		backend: newEchoBackend(t), metrics: metrics, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		cancel: cancel, returned: make(chan struct{})}
	factory := informers.NewSharedInformerFactory(ts.virtual, 0)
	nodes := factory.Core().V1().Nodes()
	var seen []authorizer.Attributes
	server, err := New(Options{
		BindAddress: "127.0.0.1", Endpoints: NewEndpoints("127.0.0.1", ports, nodes.Lister()),
		Auth: testAuth(&seen), Certificate: cert, MountNamespace: testMount, VirtualNodes: nodes,
		VirtualPods: corelisters.NewPodLister(virtualPods), PhysicalPods: corelisters.NewPodLister(physicalPods),
		Physical: fake.NewClientset(), PhysicalConfig: &rest.Config{Host: ts.backend.URL},
		Metrics: metrics, StreamIdleTimeout: idleTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	go func() {
		defer close(ts.returned)
		_ = server.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-ts.returned; factory.Shutdown() })
	return ts
}

// exec opens an exec stream to a/web and checks that it echoes.
func (ts *testServer) exec(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	var conn net.Conn
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		conn, err = tls.Dial("tcp", ts.addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed test certificate
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the node's listener does not serve: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_, _ = fmt.Fprintf(conn, "POST /exec/a/web/app?command=sh HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("exec: %s: %s", resp.Status, body)
	}
	echo(t, conn, reader)
	return conn, reader
}

func echo(t *testing.T, conn net.Conn, reader *bufio.Reader) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	defer func() { _ = conn.SetDeadline(time.Time{}) }()
	if _, err := conn.Write([]byte("ping")); err != nil {
		t.Fatalf("write to the stream: %v", err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(reader, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo %q, %v", got, err)
	}
}

// waitClosed fails unless the server closes the stream within wait.
func waitClosed(t *testing.T, conn net.Conn, reader *bufio.Reader, wait time.Duration) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	_, err := reader.ReadByte()
	var netErr net.Error
	if err == nil || (errors.As(err, &netErr) && netErr.Timeout()) {
		t.Fatalf("the stream is still open after %s: %v", wait, err)
	}
}

// waitPhysicalClosed fails unless the physical side of every stream is
// closed soon: the proxy let go of it.
func (ts *testServer) waitPhysicalClosed(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for ts.backend.open.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d physical streams still open", ts.backend.open.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStreamsCloseWhenTheirNodeGoes(t *testing.T) {
	ts := startTestServer(t, 0)
	conn, reader := ts.exec(t)
	if err := ts.virtual.CoreV1().Nodes().Delete(t.Context(), testNode, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitClosed(t, conn, reader, 5*time.Second)
	ts.waitPhysicalClosed(t)
	if got := testutil.ToFloat64(ts.metrics.streamsClosed.WithLabelValues(closedStopped)); got != 1 {
		t.Errorf("streams closed as their listener stopped: %v, want 1", got)
	}
}

func TestRunReturnsOnceItsStreamsAreClosed(t *testing.T) {
	ts := startTestServer(t, 0)
	conns := make([]net.Conn, 3)
	readers := make([]*bufio.Reader, 3)
	for i := range conns {
		conns[i], readers[i] = ts.exec(t)
	}
	ts.cancel()
	select {
	case <-ts.returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Run has not returned 10 s after its context ended")
	}
	// Closed before Run returned: no wait beyond what the bytes in flight
	// need.
	for i := range conns {
		waitClosed(t, conns[i], readers[i], 100*time.Millisecond)
	}
	ts.waitPhysicalClosed(t)
}

func TestIdleStreamsAreClosed(t *testing.T) {
	const idle = 300 * time.Millisecond
	ts := startTestServer(t, idle)
	conn, reader := ts.exec(t)
	// Traffic keeps it open past the timeout.
	for range 6 {
		time.Sleep(idle / 3)
		echo(t, conn, reader)
	}
	start := time.Now()
	waitClosed(t, conn, reader, 10*idle)
	if waited := time.Since(start); waited < idle*9/10 {
		t.Errorf("closed %s after the last byte, before the idle timeout %s", waited, idle)
	}
	ts.waitPhysicalClosed(t)
	if got := testutil.ToFloat64(ts.metrics.streamsClosed.WithLabelValues(closedIdle)); got != 1 {
		t.Errorf("streams closed as idle: %v, want 1", got)
	}
}
