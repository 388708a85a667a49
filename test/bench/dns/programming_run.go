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
	"slices"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

// run measures the syncer's heap with no Service, makes cfg.services
// Services over ten namespaces and waits until every name answers, reads
// the heap again, then times single changes among them.
func (p *programming) run(ctx context.Context) (*programmingResult, error) {
	r := &programmingResult{services: p.cfg.services}
	// Settled: the syncer has made the binding's DNS objects and idles.
	time.Sleep(5 * time.Second)
	var err error
	if r.heapBefore, err = benchenv.LiveHeap(p.metricsAddr); err != nil {
		return nil, err
	}
	benchenv.Logf("programming: creating %d Services over 10 namespaces", p.cfg.services)
	start := time.Now()
	if err := benchenv.ForEach(p.cfg.services, p.createOne); err != nil {
		return nil, err
	}
	if r.allAnswered, err = benchenv.WaitUntil(ctx, start, 10*time.Minute, "every Service's name answering", p.allAnswer); err != nil {
		return nil, err
	}
	time.Sleep(5 * time.Second)
	if r.heapAfter, err = benchenv.LiveHeap(p.metricsAddr); err != nil {
		return nil, err
	}

	n := p.cfg.changes
	benchenv.Logf("programming: %d Service creations, %d endpoint changes, %d deletions, one at a time on 4 clients", n, n, n)
	r.create, r.createErrs = samples(n, func(i int) (time.Duration, error) {
		ns, name := namespaceOf(i), fmt.Sprintf("new-%d", i)
		return p.timeUntil(ctx, fqdn(ns, name), func() error {
			_, err := p.vkube.CoreV1().Services(ns).Create(ctx, clusterIPService(ns, name), metav1.CreateOptions{})
			return err
		}, func(rcode int, ips []string) bool { return rcode == dns.RcodeSuccess && len(ips) == 1 })
	})
	// Each of the ten headless Services is moved in turn, so no two
	// samples change the same slice at once.
	var moves atomic.Int64
	r.endpoint, r.endpointErrs = samples(n, func(i int) (time.Duration, error) {
		ns, name := namespaceOf(i), "headless"
		ip := ipOf(1000 + int(moves.Add(1)))
		return p.timeUntil(ctx, fqdn(ns, name), func() error {
			slice, err := p.vkube.DiscoveryV1().EndpointSlices(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			slice.Endpoints[0].Addresses = []string{ip}
			_, err = p.vkube.DiscoveryV1().EndpointSlices(ns).Update(ctx, slice, metav1.UpdateOptions{})
			return err
		}, func(rcode int, ips []string) bool {
			return rcode == dns.RcodeSuccess && slices.Equal(ips, []string{ip})
		})
	})
	r.deleted, r.delErrs = samples(n, func(i int) (time.Duration, error) {
		ns, name := namespaceOf(i), fmt.Sprintf("new-%d", i)
		return p.timeUntil(ctx, fqdn(ns, name), func() error {
			return p.vkube.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{})
		}, func(rcode int, _ []string) bool { return rcode == dns.RcodeNameError })
	})
	return r, nil
}

// createOne makes Service i: the first of each namespace headless without
// a selector (with its EndpointSlice), the others ClusterIP with one.
func (p *programming) createOne(i int) error {
	ctx := context.Background()
	ns := namespaceOf(i)
	if i < 10*headlessPerNamespace {
		svc, slice := headlessService(ns, "headless", ipOf(i))
		if _, err := p.vkube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := p.vkube.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{})
		return err
	}
	_, err := p.vkube.CoreV1().Services(ns).Create(ctx, clusterIPService(ns, fmt.Sprintf("svc-%d", i)), metav1.CreateOptions{})
	return err
}

// allAnswer asks for every Service's name once.
func (p *programming) allAnswer(context.Context) (bool, string, error) {
	missing := 0
	for i := range p.cfg.services {
		name := fqdn(namespaceOf(i), fmt.Sprintf("svc-%d", i))
		if i < 10*headlessPerNamespace {
			name = fqdn(namespaceOf(i), "headless")
		}
		if rcode, ips := p.ask(name); rcode != dns.RcodeSuccess || len(ips) == 0 {
			missing++
		}
	}
	return missing == 0, fmt.Sprintf("%d of %d names not answered yet", missing, p.cfg.services), nil
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

func (r *programmingResult) print() {
	fmt.Printf("\nDNS programming latency at %d Services over 10 namespaces (the real kubeocean-syncer and kubeocean-dns binaries, virtual and physical apiservers on loopback; from the virtual write to the first answer that shows it, asked every 2 ms; target p99 < 1 s):\n", r.services)
	fmt.Printf("%-44s %8s %8s %8s %8s\n", "change → answer", "samples", "p50", "p99", "failed")
	for _, row := range []struct {
		label   string
		d       []time.Duration
		errs    int
		wantP99 time.Duration
	}{
		{"Service created → A record", r.create, r.createErrs, time.Second},
		{"endpoint address changed → new A record", r.endpoint, r.endpointErrs, time.Second},
		{"Service deleted → NXDOMAIN", r.deleted, r.delErrs, time.Second},
	} {
		p99 := percentile(row.d, 0.99)
		fmt.Printf("%-44s %8d %8s %8s %8d   p99 %s the 1 s target\n", row.label, len(row.d), percentile(row.d, 0.5).Round(time.Millisecond),
			p99.Round(time.Millisecond), row.errs, map[bool]string{true: "within", false: "over"}[p99 < row.wantP99])
	}
	fmt.Printf("all %d names answering after the burst of creates: %s\n", r.services, r.allAnswered.Round(100*time.Millisecond))
	per := float64(1000) / float64(r.services) / (1 << 20)
	fmt.Printf("syncer heap (after GC) with 0 and %d Services: objects %.1f → %.1f MiB, spans in use %.1f → %.1f MiB; per 1,000 Services: %.2f MiB objects, %.2f MiB spans\n",
		r.services, r.heapBefore.Objects/(1<<20), r.heapAfter.Objects/(1<<20), r.heapBefore.Spans/(1<<20), r.heapAfter.Spans/(1<<20),
		(r.heapAfter.Objects-r.heapBefore.Objects)*per, (r.heapAfter.Spans-r.heapBefore.Spans)*per)
}
