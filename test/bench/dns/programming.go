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

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// The programming phase: the real kubeocean-syncer binary between a
// virtual cluster (with its controller-manager) and a physical apiserver,
// and the real kubeocean-dns binary on loopback against the physical one,
// as the binding's pods would ask it.
const (
	progBinding   = "bench-dns"
	progClusterID = "benchdns"
	progMount     = "kubeocean-bench-dns"
	progDomain    = "cluster.local."
	// headlessPerNamespace Services of each namespace have no selector and
	// one hand-written EndpointSlice, whose address the endpoint changes
	// move.
	headlessPerNamespace = 1
)

type programming struct {
	cfg               config
	virtual, physical *controlplane.Cluster
	vkube             kubernetes.Interface
	syncer            *benchenv.Syncer
	dnsAddr           string
	metricsAddr       string
	stopDNS           func()
}

// programmingResult are the figures of the phase.
type programmingResult struct {
	services                          int
	allAnswered                       time.Duration
	heapBefore, heapAfter             benchenv.Heap
	create, endpoint, deleted         []time.Duration
	createErrs, endpointErrs, delErrs int
}

func measureProgramming(ctx context.Context, cfg config) (*programmingResult, error) {
	benchenv.Logf("programming: starting a virtual cluster (with controller-manager) and a physical apiserver")
	// A /24 of Service IPs holds ~250 Services: each cluster gets a /16.
	wide := []string{"--service-cluster-ip-range=10.0.0.0/16"}
	virtual, physical, err := testenv.StartVirtualAndPhysical(ctx,
		controlplane.Options{ControllerManager: true, ExtraAPIServerFlags: wide}, controlplane.Options{ExtraAPIServerFlags: wide})
	if err != nil {
		return nil, err
	}
	defer virtual.Stop()
	defer physical.Stop()
	p := &programming{cfg: cfg, virtual: virtual, physical: physical, vkube: virtual.Clientset(), stopDNS: func() {}}
	err = p.start(ctx)
	if p.syncer != nil {
		defer p.syncer.Stop()
	}
	defer func() { p.stopDNS() }()
	if err != nil {
		return nil, err
	}
	return p.run(ctx)
}

func namespaceOf(i int) string { return fmt.Sprintf("bench-%d", i%10) }

// start binds the physical cluster with the ten namespaces in reach, and
// runs the syncer and kubeocean-dns.
func (p *programming) start(ctx context.Context) error {
	if err := benchenv.Bind(ctx, p.virtual, p.physical, progBinding, progClusterID, progMount); err != nil {
		return err
	}
	ocean := kubeoceanclient.NewForConfigOrDie(p.virtual.Config()).KubeoceanV1alpha1().ClusterBindings()
	b, err := ocean.Get(ctx, progBinding, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for i := range 10 {
		b.Spec.ServiceNamespaces = append(b.Spec.ServiceNamespaces, namespaceOf(i))
		if _, err := p.vkube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespaceOf(i)}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	if _, err := ocean.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if p.metricsAddr, err = controlplane.FreeLoopbackAddress(); err != nil {
		return err
	}
	p.syncer, err = benchenv.StartSyncer(p.cfg.syncer, p.virtual, progBinding, "--kube-api-qps=1000", "--kube-api-burst=2000",
		"--physical-kube-api-qps=1000", "--physical-kube-api-burst=2000",
		"--metrics-bind-address="+p.metricsAddr, "--health-probe-bind-address=0", "--profiling")
	if err != nil {
		return err
	}
	return p.startDNS(ctx, string(b.UID))
}

// startDNS runs the kubeocean-dns binary for the binding against the
// physical apiserver, waiting until it answers (SERVFAIL until synced).
func (p *programming) startDNS(ctx context.Context, uid string) error {
	addr, err := controlplane.FreeLoopbackAddress()
	if err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(p.physical.Dir, "kubeocean-dns.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(p.cfg.dnsBinary, "--kubeconfig="+p.physical.KubeconfigPath, "--namespace="+progMount, "--binding-uid="+uid,
		"--listen-address="+addr, "--upstream=127.0.0.1:9", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting %s: %w", p.cfg.dnsBinary, err)
	}
	p.stopDNS = func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = log.Close() }
	p.dnsAddr = addr
	_, err = benchenv.WaitUntil(ctx, time.Now(), 60*time.Second, "kubeocean-dns answering", func(context.Context) (bool, string, error) {
		rcode, _ := p.ask("nothing.bench-0.svc." + progDomain)
		return rcode == dns.RcodeNameError, dns.RcodeToString[rcode], nil
	})
	return err
}

// ask queries the server for the A records of name: the rcode (-1 when
// it did not answer) and the addresses, sorted.
func (p *programming) ask(name string) (int, []string) {
	c := &dns.Client{Timeout: 500 * time.Millisecond}
	resp, _, err := c.Exchange(new(dns.Msg).SetQuestion(name, dns.TypeA), p.dnsAddr)
	if err != nil {
		return -1, nil
	}
	var ips []string
	for _, rr := range resp.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	sort.Strings(ips)
	return resp.Rcode, ips
}

func fqdn(namespace, name string) string {
	return name + "." + namespace + ".svc." + progDomain
}

func clusterIPService(namespace, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}
}

// headlessService is a headless Service without a selector and its one
// hand-written EndpointSlice holding ip.
func headlessService(namespace, name, ip string) (*corev1.Service, *discoveryv1.EndpointSlice) {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	return svc, slice
}

// timeUntil runs change, then asks the server every 2 ms until answered
// holds: the time from just before change to the first such answer.
func (p *programming) timeUntil(ctx context.Context, name string, change func() error, answered func(rcode int, ips []string) bool) (time.Duration, error) {
	start := time.Now()
	if err := change(); err != nil {
		return 0, err
	}
	for deadline := start.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		if answered(p.ask(name)) {
			return time.Since(start), nil
		}
	}
	return 0, fmt.Errorf("%s: no expected answer within 30 s", name)
}

// samples runs n measurements on 4 goroutines (a steady trickle of
// changes beside the 1,000 Services) and returns the latencies and the
// number that failed.
func samples(n int, measure func(i int) (time.Duration, error)) ([]time.Duration, int) {
	var (
		mu   sync.Mutex
		out  []time.Duration
		errs int
		wg   sync.WaitGroup
		next = make(chan int)
	)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				d, err := measure(i)
				mu.Lock()
				if err != nil {
					errs++
					benchenv.Logf("programming sample %d: %v", i, err)
				} else {
					out = append(out, d)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	slices.Sort(out)
	return out, errs
}

func ipOf(i int) string { return net.IPv4(10, 200, byte(i/256), byte(i%256)).String() }
