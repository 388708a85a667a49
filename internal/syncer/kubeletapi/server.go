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
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// nodeServer is the kubelet API of one virtual node.
type nodeServer struct {
	node         string
	auth         *Auth
	resolver     *resolver
	physical     kubernetes.Interface
	streams      *streamProxy
	sessions     *sessions
	virtualNodes corelisters.NodeLister
	statsEnabled bool
	metrics      *Metrics
}

// handler routes the kubelet paths the virtual apiserver and
// metrics-server use. Every route is authenticated and authorized first.
func (s *nodeServer) handler() http.Handler {
	mux := http.NewServeMux()
	s.route(mux, "GET /containerLogs/{namespace}/{pod}/{container}", opLogs, s.serveLogs)
	for _, op := range []struct{ path, op, sub string }{
		{"/exec/{namespace}/{pod}/{container}", opExec, "exec"},
		{"/exec/{namespace}/{pod}/{uid}/{container}", opExec, "exec"},
		{"/attach/{namespace}/{pod}/{container}", opAttach, "attach"},
		{"/attach/{namespace}/{pod}/{uid}/{container}", opAttach, "attach"},
		{"/portForward/{namespace}/{pod}", opPortForward, "portforward"},
		{"/portForward/{namespace}/{pod}/{uid}", opPortForward, "portforward"},
	} {
		// Only GET (WebSocket) and POST (SPDY) open a stream; the mux
		// answers 405 to the other methods of these paths.
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			s.route(mux, method+" "+op.path, op.op, s.stream(op.op, op.sub))
		}
	}
	s.route(mux, "GET /stats/summary", opStats, func(w http.ResponseWriter, r *http.Request) error {
		return s.serveStats(w, r, "stats/summary")
	})
	s.route(mux, "GET /metrics/resource", opStats, func(w http.ResponseWriter, r *http.Request) error {
		return s.serveStats(w, r, "metrics/resource")
	})
	s.route(mux, "GET /healthz", opHealthz, func(w http.ResponseWriter, _ *http.Request) error {
		_, err := w.Write([]byte("ok"))
		return err
	})
	return mux
}

// route registers serve at pattern behind authentication, authorization,
// metrics and error answers.
func (s *nodeServer) route(mux *http.ServeMux, pattern, op string, serve func(http.ResponseWriter, *http.Request) error) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		recorder := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		defer func() { s.metrics.requests.WithLabelValues(op, strconv.Itoa(recorder.code)).Inc() }()
		logger := klog.FromContext(r.Context()).WithValues("node", s.node, "operation", op)
		r = r.WithContext(klog.NewContext(r.Context(), logger))

		var u user.Info
		err := allowedMethod(r, op)
		if err == nil {
			u, err = check(s.auth, r, s.node, op)
		}
		if err == nil {
			logger.V(4).Info("Kubelet API request", "user", u.GetName(), "path", r.URL.Path)
			streams := s.metrics.openStreams.WithLabelValues(op)
			streams.Inc()
			err = serve(recorder, r)
			streams.Dec()
		}
		if err != nil {
			s.answer(recorder, r, op, err)
		}
	})
}

// allowedMethod refuses HEAD on the stream paths: their GET patterns
// match it too, and it opens no stream. (The mux answers the other
// methods.)
func allowedMethod(r *http.Request, op string) error {
	if isStream(op) && r.Method != http.MethodGet && r.Method != http.MethodPost {
		return &requestError{Code: http.StatusMethodNotAllowed, Message: "exec, attach and port-forward take GET or POST"}
	}
	return nil
}

// answer writes err as the response: its code and message for a
// requestError, 500 for anything else.
func (s *nodeServer) answer(w http.ResponseWriter, r *http.Request, op string, err error) {
	var re *requestError
	if !errors.As(err, &re) {
		klog.FromContext(r.Context()).Error(err, "Kubelet API request failed")
		re = &requestError{Code: http.StatusInternalServerError, Message: err.Error()}
	}
	if re.Code == http.StatusBadGateway {
		s.metrics.physicalErrors.WithLabelValues(op).Inc()
	}
	http.Error(w, re.Message, re.Code)
}

// stream serves exec, attach or port-forward by proxying to subresource of
// the physical pod. The stream is one of the listener's sessions, closed
// when idle or when the listener stops.
func (s *nodeServer) stream(op, subresource string) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if !s.sessions.begin() {
			return &requestError{Code: http.StatusServiceUnavailable, Message: "the kubelet API of node " + s.node + " is stopping"}
		}
		defer s.sessions.end()
		container := r.PathValue("container")
		target, err := s.resolver.pod(s.node, r.PathValue("namespace"), r.PathValue("pod"), container)
		if err != nil {
			return err
		}
		bytes := s.metrics.bytes.WithLabelValues(op)
		tracked := sessionWriter{ResponseWriter: w, sessions: s.sessions, logger: klog.FromContext(r.Context())}
		counted := hijackCounter{ResponseWriter: tracked, count: func(n int) { bytes.Add(float64(n)) }}
		s.streams.serve(counted, r, target, subresource, container, errorResponder{op: op, target: target, metrics: s.metrics})
		return nil
	}
}

// physicalNode is the physical node of the virtual node served.
func (s *nodeServer) physicalNode() (string, error) {
	node, err := s.virtualNodes.Get(s.node)
	if err != nil {
		return "", notFound("node %s not found: %v", s.node, err)
	}
	// A name over 63 characters fits no label value: it is in the
	// annotation only.
	name := kubeoceanv1alpha1.PhysicalNodeNameOf(node)
	if name == "" {
		return "", notFound("node %s has no physical node", s.node)
	}
	return name, nil
}

// statusRecorder remembers the response code for the request metric.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Hijack lets exec, attach and port-forward take the connection over (the
// proxy asserts http.Hijacker itself, it does not unwrap).
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hijacker, ok := r.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("response writer %T cannot be hijacked", r.ResponseWriter)
	}
	r.code = http.StatusSwitchingProtocols
	return hijacker.Hijack()
}

var _ proxy.ErrorResponder = errorResponder{}

// nodePortOf reads the port recorded on a virtual node, or 0.
func nodePortOf(node *corev1.Node) int {
	port, err := strconv.Atoi(node.Annotations[kubeoceanv1alpha1.AnnotationKubeletPort])
	if err != nil {
		return 0
	}
	return port
}
