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
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/klog/v2"
)

// streamProxy forwards exec, attach and port-forward to the physical
// apiserver's pods/exec, pods/attach and pods/portforward. The virtual
// apiserver talks to a kubelet in the same streaming protocols (SPDY, or
// WebSocket) that the physical apiserver accepts from a client, with the
// same query parameters, so the upgraded connection is passed through as
// it is: stdin, tty resize, the exit status and port-forward data are
// streams inside it that need no translation here.
type streamProxy struct {
	host      *url.URL
	transport http.RoundTripper
	upgrade   proxy.UpgradeRequestRoundTripper
}

// newStreamProxy builds the transports once from the physical cluster's
// client config; the syncer's identity is added to each proxied request.
func newStreamProxy(config *rest.Config) (*streamProxy, error) {
	host, err := url.Parse(config.Host)
	if err != nil {
		return nil, fmt.Errorf("physical apiserver address %q: %w", config.Host, err)
	}
	rt, err := rest.TransportFor(config)
	if err != nil {
		return nil, err
	}
	upgrade, err := upgradeTransport(config)
	if err != nil {
		return nil, err
	}
	return &streamProxy{host: host, transport: rt, upgrade: upgrade}, nil
}

// sessionCacheSize bounds the TLS sessions kept for resumption: the
// physical apiserver's addresses, a handful.
const sessionCacheSize = 16

// upgradeTransport dials the physical apiserver with the config's TLS
// settings and adds its credentials to the upgrade request (as kubectl
// proxy does): an upgraded connection cannot go through an http.Transport.
func upgradeTransport(config *rest.Config) (proxy.UpgradeRequestRoundTripper, error) {
	transportConfig, err := config.TransportConfig()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := transport.TLSConfigFor(transportConfig)
	if err != nil {
		return nil, err
	}
	if tlsConfig != nil {
		// Every exec, attach and port-forward dials the physical apiserver
		// anew (an upgraded connection is never reused): resuming the TLS
		// session skips the certificate exchange and its verification in
		// each handshake after the first.
		tlsConfig.ClientSessionCache = tls.NewLRUClientSessionCache(sessionCacheSize)
	}
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if config.Dial != nil {
		dial = config.Dial
	}
	rt := utilnet.SetOldTransportDefaults(&http.Transport{TLSClientConfig: tlsConfig, DialContext: dial})
	wrapped, err := transport.HTTPWrappersForConfig(transportConfig, proxy.MirrorRequest)
	if err != nil {
		return nil, err
	}
	return proxy.NewUpgradeRequestRoundTripper(rt, wrapped), nil
}

// kubeletToPodParams renames the kubelet's streaming query parameters to
// those of the pods/exec, pods/attach and pods/portforward API (the
// apiserver renames them the other way when it calls a kubelet).
var kubeletToPodParams = map[string]string{
	"input": "stdin", "output": "stdout", "error": "stderr", "port": "ports",
}

// podQuery is the physical subresource's query for a kubelet query, with
// the container (exec and attach) moved from the kubelet's path into it.
func podQuery(kubelet url.Values, container string) url.Values {
	query := url.Values{}
	for key, values := range kubelet {
		if renamed, ok := kubeletToPodParams[key]; ok {
			key = renamed
		}
		query[key] = append(query[key], values...)
	}
	if container != "" {
		query.Set("container", container)
	}
	return query
}

// serve proxies r to subresource of target.
func (p *streamProxy) serve(w http.ResponseWriter, r *http.Request, target physicalPod, subresource, container string, responder proxy.ErrorResponder) {
	query := podQuery(r.URL.Query(), container)
	location := *p.host
	location.Path = strings.TrimSuffix(location.Path, "/") +
		fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/%s", target.Namespace, target.Name, subresource)
	location.RawQuery = query.Encode()

	clean := r.Clone(r.Context())
	stripCredentials(clean.Header)
	handler := proxy.NewUpgradeAwareHandler(&location, p.transport, false, true, responder)
	handler.UpgradeTransport = p.upgrade
	handler.UseLocationHost = true
	handler.ServeHTTP(w, clean)
}

// stripCredentials drops what the caller sent to authenticate itself here:
// the physical apiserver must see the syncer's identity only (a bearer
// token already on the request would otherwise be forwarded, since the
// client-go wrappers do not replace an Authorization header).
func stripCredentials(h http.Header) {
	h.Del("Authorization")
	for key := range h {
		if strings.HasPrefix(strings.ToLower(key), "impersonate-") {
			h.Del(key)
		}
	}
}

// hijackCounter counts the bytes of a hijacked connection, for the
// streamed-bytes metric of exec, attach and port-forward.
type hijackCounter struct {
	http.ResponseWriter
	count func(n int)
}

func (h hijackCounter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hijacker, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, fmt.Errorf("response writer %T cannot be hijacked", h.ResponseWriter)
	}
	conn, rw, err := hijacker.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return countedConn{Conn: conn, count: h.count}, rw, nil
}

func (h hijackCounter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

type countedConn struct {
	net.Conn
	count func(n int)
}

func (c countedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.count(n)
	return n, err
}

func (c countedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.count(n)
	return n, err
}

// errorResponder answers a failed proxy call and logs it.
type errorResponder struct {
	op      string
	target  physicalPod
	metrics *Metrics
}

func (e errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	klog.FromContext(r.Context()).Error(err, "Physical cluster call failed", "operation", e.op,
		"physicalPod", klog.KRef(e.target.Namespace, e.target.Name), "node", e.target.Node)
	e.metrics.physicalErrors.WithLabelValues(e.op).Inc()
	http.Error(w, "physical cluster: "+err.Error(), http.StatusBadGateway)
}
