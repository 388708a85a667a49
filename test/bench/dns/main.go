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

// Command dns measures kubeocean-dns and prints its figures beside a floor
// and CoreDNS, measured in the same run (the shared machine's absolute
// figures vary, the ratios hold): queries per second
// and p50/p99 latency of UDP clients asking, one name at a time, for a
// ClusterIP name, a headless name with 100 endpoints, an NXDOMAIN and a
// forwarded name. The floor is a minimal miekg/dns server answering the
// same messages from a static map; CoreDNS (built from its module, see
// --coredns) serves the same names with its kubernetes plugin from a real
// apiserver. It also prints the heap that kubeocean-dns's caches and index
// take per 1,000 mirror Services. kubeocean-dns runs in this process on a
// fake clientset (the figures are of answering, not of the apiserver); the
// load generator shares the machine's cores with every server.
//
// Then, on real control planes (a virtual cluster with its
// controller-manager, a physical apiserver), the real kubeocean-syncer
// binary mirrors --services Services of ten namespaces and the real
// kubeocean-dns binary answers for them on loopback: DNS programming
// latency p50/p99 (a virtual Service created, a hand-written endpoint's
// address changed, a Service deleted → the first answer that shows it)
// against the target p99 < 1 s, and the syncer's heap with none and with
// the Services, per 1,000 (--syncer="" skips this part). Run it with
// `make bench-dns`.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/internal/app"
	kodns "github.com/kubeocean/kubeocean/internal/dns"
)

type config struct {
	clients  int
	duration time.Duration
	services int
	coredns  string
	// syncer and dnsBinary are the binaries of the programming phase;
	// changes is its samples per kind of change.
	syncer, dnsBinary string
	changes           int
}

// name is one query of the benchmark and what a good answer holds.
type name struct {
	label   string
	qname   string
	qtype   uint16
	rcode   int
	answers int
}

var names = []name{
	{"ClusterIP", "web.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, 1},
	{"headless, 100 endpoints", "db.shop.svc.cluster.local.", dns.TypeA, dns.RcodeSuccess, 100},
	{"NXDOMAIN", "nope.shop.svc.cluster.local.", dns.TypeA, dns.RcodeNameError, 0},
	{"forwarded", "example.org.", dns.TypeA, dns.RcodeSuccess, 1},
}

func main() {
	var cfg config
	flag.IntVar(&cfg.clients, "clients", 8, "concurrent UDP clients, each with one query in flight")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "load time per name and server")
	flag.IntVar(&cfg.services, "services", 1000, "mirror Services for the memory figure")
	flag.StringVar(&cfg.coredns, "coredns", "build", "CoreDNS binary to measure beside them, serving the same names with its kubernetes plugin from a real apiserver (hack/testbin.sh's): a path, \"build\" (built from its module once and cached), or empty (not measured)")
	flag.StringVar(&cfg.syncer, "syncer", "bin/kubeocean-syncer", "kubeocean-syncer binary of the DNS programming phase on real control planes (empty: that phase is skipped)")
	flag.StringVar(&cfg.dnsBinary, "dns", "bin/kubeocean-dns", "kubeocean-dns binary of the DNS programming phase")
	flag.IntVar(&cfg.changes, "changes", 200, "samples of each kind of change in the DNS programming phase")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench-dns:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	perThousand, err := heapPerThousand(ctx, cfg.services)
	if err != nil {
		return err
	}
	upstream, err := serve(ctx, dns.HandlerFunc(answerStatic))
	if err != nil {
		return err
	}
	kube := fake.NewClientset(append([]runtimeObject{mirror("shop", "web", clusterIP("10.0.0.10"))}, headless("shop", "db", 100)...)...)
	server, stopServer, err := startServer(ctx, kube, upstream)
	if err != nil {
		return err
	}
	defer stopServer()
	floorHandler, err := recordFloor(server, names)
	if err != nil {
		return err
	}
	floor, err := serve(ctx, floorHandler)
	if err != nil {
		return err
	}

	servers := []string{server, floor}
	header := []string{"kubeocean-dns", "floor (static map)"}
	if cfg.coredns == "build" {
		if cfg.coredns, err = buildCoreDNS(ctx); err != nil {
			return err
		}
	}
	if cfg.coredns != "" {
		coredns, stopCoreDNS, err := startCoreDNS(ctx, cfg.coredns, upstream)
		if err != nil {
			return err
		}
		defer stopCoreDNS()
		servers, header = append(servers, coredns), append(header, "CoreDNS")
	}
	if err := table(ctx, cfg, servers, header); err != nil {
		return err
	}
	fmt.Printf("\nheap of the caches and index per 1,000 mirror Services (ClusterIP, one 2-endpoint slice each): %.2f MiB\n", perThousand/(1<<20))
	if cfg.coredns == "" {
		fmt.Println("CoreDNS: not measured (--coredns=\"\").")
	}
	if cfg.syncer == "" {
		fmt.Println("DNS programming latency and the syncer's heap: not measured (--syncer=\"\").")
		return nil
	}
	r, err := measureProgramming(ctx, cfg)
	if err != nil {
		return fmt.Errorf("programming phase: %w", err)
	}
	r.print()
	return nil
}

// table loads each server with each name in turn and prints the figures,
// with each server's rate as a fraction of the floor's (servers[1]).
func table(ctx context.Context, cfg config, servers, header []string) error {
	fmt.Printf("%d UDP clients, %v per name and server, GOMAXPROCS %d\n\n", cfg.clients, cfg.duration, runtime.GOMAXPROCS(0))
	fmt.Printf("%-24s", "name")
	for _, h := range header {
		fmt.Printf(" %-42s", h)
	}
	fmt.Printf(" rate / floor\n")
	for _, n := range names {
		fmt.Printf("%-24s", n.label)
		rates := make([]float64, len(servers))
		for i, addr := range servers {
			got, err := load(ctx, addr, n.qname, n.qtype, n.rcode, n.answers, cfg.clients, cfg.duration)
			if err != nil {
				return fmt.Errorf("%s: %w", header[i], err)
			}
			fmt.Printf(" %-42s", got.String()+errorNote(got.errors))
			rates[i] = got.qps
		}
		var ratios []string
		for i, r := range rates {
			if i != 1 {
				ratios = append(ratios, fmt.Sprintf("%.2f", r/rates[1]))
			}
		}
		fmt.Printf(" %s\n", strings.Join(ratios, " / "))
	}
	return nil
}

func errorNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d bad)", n)
}

// startServer runs kubeocean-dns on kube until stop, once synced.
func startServer(ctx context.Context, kube *fake.Clientset, upstream string) (string, func(), error) {
	opts := kodns.NewOptions()
	opts.Namespace, opts.BindingUID, opts.ListenAddress = mountNamespace, bindingUID, "127.0.0.1:0"
	opts.Upstreams = []string{upstream}
	server, runnables, err := kodns.Assemble(kube, opts, prometheus.NewRegistry())
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = app.RunAll(ctx, runnables...) }()
	stop := func() { cancel(); <-done }
	for !server.Ready() {
		if ctx.Err() != nil {
			stop()
			return "", nil, ctx.Err()
		}
		time.Sleep(5 * time.Millisecond)
	}
	return server.Addr(), stop, nil
}

// heapPerThousand is the live heap that a synced server adds on a cluster
// of n mirror Services, per 1,000. The fake clientset's own copies are in
// the baseline.
func heapPerThousand(ctx context.Context, n int) (float64, error) {
	var objs []runtimeObject
	for i := range n {
		ns := fmt.Sprintf("ns-%d", i%10)
		svc := mirror(ns, fmt.Sprintf("svc-%d", i), clusterIP(fmt.Sprintf("10.%d.%d.%d", 1+i/65536, i/256%256, i%256)))
		objs = append(objs, svc, endpointSlice(svc, 2, i))
	}
	kube := fake.NewClientset(objs...)
	before := liveHeap()
	_, stop, err := startServer(ctx, kube, "127.0.0.1:9")
	if err != nil {
		return 0, err
	}
	after := liveHeap()
	stop()
	runtime.KeepAlive(kube)
	return float64(after-before) * 1000 / float64(n), nil
}

func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// serve runs handler on a UDP port of loopback until ctx ends.
func serve(ctx context.Context, handler dns.Handler) (string, error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	started := make(chan struct{})
	srv := &dns.Server{PacketConn: pc, Handler: handler, NotifyStartedFunc: func() { close(started) }}
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	go func() { <-ctx.Done(); _ = srv.Shutdown() }()
	return pc.LocalAddr().String(), nil
}

// answerStatic is the upstream of forwarded names: A 192.0.2.1 for all.
func answerStatic(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg).SetReply(req)
	m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: req.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.IPv4(192, 0, 2, 1)}}
	_ = w.WriteMsg(m)
}

// recordFloor asks the server once for each name and returns a handler
// that answers the same messages from a map: the least any server can do.
func recordFloor(server string, names []name) (dns.Handler, error) {
	answers := map[string]*dns.Msg{}
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	for _, n := range names {
		resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(n.qname, n.qtype), server)
		if err != nil {
			return nil, err
		}
		answers[strings.ToLower(n.qname)+"/"+dns.TypeToString[n.qtype]] = resp
	}
	return dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		q := req.Question[0]
		m := new(dns.Msg).SetReply(req)
		if stored, ok := answers[strings.ToLower(q.Name)+"/"+dns.TypeToString[q.Qtype]]; ok {
			m.Rcode, m.Answer, m.Ns = stored.Rcode, stored.Answer, stored.Ns
		} else {
			m.Rcode = dns.RcodeNameError
		}
		if opt := req.IsEdns0(); opt != nil {
			m.SetEdns0(opt.UDPSize(), false)
		}
		m.Compress = true
		_ = w.WriteMsg(m)
	}), nil
}
