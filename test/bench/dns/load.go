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
	"sync"
	"time"

	"github.com/miekg/dns"
)

// figures are what one load run measured.
type figures struct {
	qps      float64
	p50, p99 time.Duration
	errors   int
}

func (f figures) String() string {
	return fmt.Sprintf("%9.0f q/s  p50 %7s  p99 %7s", f.qps, round(f.p50), round(f.p99))
}

func round(d time.Duration) string {
	return d.Round(time.Microsecond).String()
}

// load sends the query (name, qtype) to addr over UDP from clients
// concurrent clients, each waiting for its answer before the next query,
// for duration, and checks every answer has rcode and answerCount records.
func load(ctx context.Context, addr, name string, qtype uint16, rcode, answerCount, clients int, duration time.Duration) (figures, error) {
	end := time.Now().Add(duration)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      int
		firstErr  error
		wg        sync.WaitGroup
	)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			own, n, err := client(ctx, end, addr, name, qtype, rcode, answerCount)
			mu.Lock()
			defer mu.Unlock()
			latencies = append(latencies, own...)
			errs += n
			if firstErr == nil {
				firstErr = err
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(latencies) == 0 {
		return figures{}, fmt.Errorf("no answer from %s for %s: %v", addr, name, firstErr)
	}
	slices.Sort(latencies)
	return figures{
		qps:    float64(len(latencies)) / elapsed.Seconds(),
		p50:    latencies[len(latencies)/2],
		p99:    latencies[len(latencies)*99/100],
		errors: errs,
	}, nil
}

// client runs one sequential client until end (or ctx ends); it returns
// the latencies of the good answers and how many were wrong or lost.
func client(ctx context.Context, end time.Time, addr, name string, qtype uint16, rcode, answerCount int) ([]time.Duration, int, error) {
	c := &dns.Client{Net: "udp", Timeout: time.Second, UDPSize: 4096}
	conn, err := c.Dial(addr)
	if err != nil {
		return nil, 1, err
	}
	defer func() { _ = conn.Close() }()
	msg := new(dns.Msg).SetQuestion(name, qtype)
	msg.SetEdns0(4096, false)
	var (
		out     []time.Duration
		bad     int
		lastErr error
	)
	for ctx.Err() == nil && time.Now().Before(end) {
		msg.Id = dns.Id()
		t0 := time.Now()
		resp, _, err := c.ExchangeWithConn(msg, conn)
		d := time.Since(t0)
		switch {
		case err != nil:
			bad++
			lastErr = err
		case resp.Rcode != rcode || len(resp.Answer) != answerCount || resp.Truncated:
			bad++
			lastErr = fmt.Errorf("%s: rcode %s, %d records, TC %v", name, dns.RcodeToString[resp.Rcode], len(resp.Answer), resp.Truncated)
		default:
			out = append(out, d)
		}
	}
	return out, bad, lastErr
}
