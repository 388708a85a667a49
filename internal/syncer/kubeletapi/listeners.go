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
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1informers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// resyncPeriod is how often listeners are checked against the nodes even
// without a node event, so that a port that was busy is tried again.
const resyncPeriod = 30 * time.Second

// Endpoints give the virtual nodes of one binding their kubelet endpoint:
// the configured address and a port of the process-wide allocator.
type Endpoints struct {
	address string
	ports   *PortAllocator
	nodes   corelisters.NodeLister
	seed    sync.Once
}

// NewEndpoints returns the endpoints of the virtual nodes in nodes (the
// binding's), advertised at address.
func NewEndpoints(address string, ports *PortAllocator, nodes corelisters.NodeLister) *Endpoints {
	return &Endpoints{address: address, ports: ports, nodes: nodes}
}

// For returns the address and port of the virtual node name; current is
// the node as it exists (nil before it is created). Called first once the
// node cache has synced, it gives every node its recorded port back before
// any new node is given one, so nodes keep their ports across restarts.
func (e *Endpoints) For(name string, current *corev1.Node) (string, int, error) {
	e.seed.Do(e.reserveRecorded)
	recorded := 0
	if current != nil {
		recorded = nodePortOf(current)
	}
	port, err := e.ports.Assign(name, recorded)
	return e.address, port, err
}

func (e *Endpoints) reserveRecorded() {
	nodes, err := e.nodes.List(labels.Everything())
	if err != nil {
		return
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		e.ports.Reserve(n.Name, nodePortOf(n))
	}
}

// Options configure a Server.
type Options struct {
	// BindAddress is the host the listeners bind ("" or "0.0.0.0": all).
	BindAddress string
	Endpoints   *Endpoints
	Auth        *Auth
	Certificate *ServingCertificate
	// MountNamespace holds the binding's physical pods.
	MountNamespace string
	// VirtualNodes are the binding's virtual nodes (label-scoped);
	// VirtualPods the virtual cluster's pods (at least those on the
	// binding's virtual nodes); PhysicalPods the binding's physical pods.
	VirtualNodes corev1informers.NodeInformer
	VirtualPods  corelisters.PodLister
	PhysicalPods corelisters.PodLister
	// PhysicalPodsOn, when set, returns the binding's physical pods on a
	// physical node, for node stats, without making a Pod of every cached
	// record as PhysicalPods would; nil filters PhysicalPods.
	PhysicalPodsOn func(physicalNode string) []metav1.Object
	// Physical reads logs and node stats; PhysicalConfig is its config,
	// for the streaming proxy.
	Physical       kubernetes.Interface
	PhysicalConfig *rest.Config
	// StatsEnabled serves stats/summary and metrics/resource (they need
	// nodes/proxy in the physical cluster).
	StatsEnabled bool
	Metrics      *Metrics
	// Recorder, when set, records refused requests on virtual pods.
	Recorder record.EventRecorder
	// StreamIdleTimeout closes an exec, attach or port-forward stream
	// that carried no byte either way for that long; 0 is
	// DefaultStreamIdleTimeout.
	StreamIdleTimeout time.Duration
}

// Server keeps one kubelet API listener per virtual node of a binding.
type Server struct {
	opts     Options
	streams  *streamProxy
	resolver *resolver
	trigger  chan struct{}
	// listeners is only touched by Run's goroutine.
	listeners map[string]*listener
}

type listener struct {
	port   int
	server *http.Server
	// sessions are the streams of the listener, which outlive
	// server.Close.
	sessions *sessions
	done     chan struct{}
}

// New builds the server and registers for node events; Run serves.
func New(opts Options) (*Server, error) {
	if opts.Endpoints == nil || opts.Auth == nil || opts.Certificate == nil || opts.Metrics == nil {
		return nil, errors.New("kubelet API: options Endpoints, Auth, Certificate and Metrics are required")
	}
	streams, err := newStreamProxy(opts.PhysicalConfig)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opts: opts, streams: streams, trigger: make(chan struct{}, 1), listeners: map[string]*listener{},
		resolver: &resolver{virtualPods: opts.VirtualPods, physicalPods: opts.PhysicalPods, physicalPodsOn: opts.PhysicalPodsOn, mountNamespace: opts.MountNamespace, recorder: opts.Recorder},
	}
	poke := func(any) { s.poke() }
	_, err = opts.VirtualNodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, DeleteFunc: poke, UpdateFunc: func(_, obj any) { poke(obj) },
	})
	return s, err
}

func (s *Server) poke() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Run serves until ctx ends, then closes every listener and its streams;
// it returns once their handlers have.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("kubelet-api")
	ctx = klog.NewContext(ctx, logger)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.opts.Certificate.Run(ctx) }()
	go func() { defer wg.Done(); s.opts.Auth.Run(ctx) }()
	defer wg.Wait()
	if !cache.WaitForCacheSync(ctx.Done(), s.opts.VirtualNodes.Informer().HasSynced) {
		return nil
	}
	ticker := time.NewTicker(resyncPeriod)
	defer ticker.Stop()
	for {
		s.sync(ctx)
		select {
		case <-ctx.Done():
			for name := range s.listeners {
				s.stop(ctx, name)
			}
			return nil
		case <-s.trigger:
		case <-ticker.C:
		}
	}
}

// sync starts a listener for every virtual node on its port and stops
// those of nodes that are gone or moved.
func (s *Server) sync(ctx context.Context) {
	logger := klog.FromContext(ctx)
	nodes, err := s.opts.VirtualNodes.Lister().List(labels.Everything())
	if err != nil {
		logger.Error(err, "Listing virtual nodes")
		return
	}
	want := make(map[string]int, len(nodes))
	for _, n := range nodes {
		_, port, err := s.opts.Endpoints.For(n.Name, n)
		if err != nil {
			logger.Error(err, "No kubelet API port for virtual node", "node", klog.KObj(n))
			continue
		}
		want[n.Name] = port
	}
	for name, l := range s.listeners {
		if port, ok := want[name]; !ok || port != l.port {
			s.stop(ctx, name)
			if !ok {
				s.opts.Endpoints.ports.Release(name)
			}
		}
	}
	for name, port := range want {
		if _, ok := s.listeners[name]; ok {
			continue
		}
		if err := s.start(ctx, name, port); err != nil {
			logger.Error(err, "Starting the kubelet API listener of a virtual node; will retry", "node", klog.KRef("", name), "port", port)
		}
	}
}

func (s *Server) start(ctx context.Context, node string, port int) error {
	address := net.JoinHostPort(s.opts.BindAddress, strconv.Itoa(port))
	raw, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	tlsConfig := s.opts.Certificate.TLSConfig()
	// Upgraded streams need HTTP/1.1: HTTP/2 cannot hand the connection
	// over.
	tlsConfig.NextProtos = []string{"http/1.1"}
	ns := &nodeServer{
		node: node, auth: s.opts.Auth, resolver: s.resolver, physical: s.opts.Physical, streams: s.streams,
		sessions:     newSessions(s.opts.StreamIdleTimeout, s.opts.Metrics),
		virtualNodes: s.opts.VirtualNodes.Lister(), statsEnabled: s.opts.StatsEnabled, metrics: s.opts.Metrics,
	}
	server := &http.Server{
		Handler:           ns.handler(),
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	l := &listener{port: port, server: server, sessions: ns.sessions, done: make(chan struct{})}
	s.listeners[node] = l
	go func() {
		defer close(l.done)
		if err := server.Serve(tls.NewListener(raw, tlsConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			klog.FromContext(ctx).Error(err, "Kubelet API listener failed", "node", klog.KRef("", node), "port", port)
		}
	}()
	klog.FromContext(ctx).Info("Serving the kubelet API of a virtual node", "node", klog.KRef("", node), "address", address)
	return nil
}

// stop closes a node's listener and its connections, its streams too
// (exec, attach and port-forward of a node that went, or on a port that
// moved, must not go on), and waits for the streams' handlers; other
// requests in flight end with their contexts.
func (s *Server) stop(ctx context.Context, node string) {
	l := s.listeners[node]
	delete(s.listeners, node)
	if err := l.server.Close(); err != nil {
		klog.FromContext(ctx).Error(err, "Closing a kubelet API listener", "node", klog.KRef("", node))
	}
	streams := l.sessions.len()
	l.sessions.closeAll()
	<-l.done
	klog.FromContext(ctx).V(2).Info("Stopped the kubelet API listener of a virtual node", "node", klog.KRef("", node), "port", l.port, "closedStreams", streams)
}
