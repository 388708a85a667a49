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
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

// target is one figure of the burst stated against a bound measured in the
// same run: the shared machine's absolute times vary from hour to hour,
// the ratio to what the same run could reach holds.
type target struct {
	figure string
	// value and bound are printed as they are; met says whether value
	// meets the target stated in want.
	value, bound, want string
	met                bool
}

// targets are the burst's targets, each beside its bound:
//   - the rates until all physical pods exist and until all virtual pods
//     are Running, against what the burst could have reached had the
//     syncer used no CPU (withoutSyncerCPU);
//   - the Running rate against the plain floor's (an unthrottled client
//     creating the pods straight into the physical cluster);
//   - the p99 from virtual create to physical pod against the no-CPU
//     estimate of it;
//   - the p99 from physical Running to virtual Running against the p99 of
//     the one write it needs, the syncer's pod status write as the virtual
//     apiserver answered it in the burst;
//   - the syncer's share of all processes' CPU.
func (r results) targets() []target {
	b := r.burst
	bound := b.withoutSyncerCPU()
	ratio := func(boundTime, took time.Duration) float64 {
		if took <= 0 {
			return 0
		}
		return boundTime.Seconds() / took.Seconds()
	}
	exist, running := ratio(bound.exist, b.exist), ratio(bound.running, b.running)
	plain := ratio(r.plain.running, b.running)
	createP99, createBound := b.createLatency.percentile(0.99), bound.createP99
	runP99 := b.runLatency.percentile(0.99)
	writeP99 := time.Duration(statusWrites(b.window.waits.requests).Quantile(0.99) * float64(time.Second))
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return []target{
		{"pods/s until all physical pods exist, ÷ had the syncer used no CPU",
			fmt.Sprintf("%.2f", exist), rate(r.n, bound.exist), "≥ 0.9", exist >= 0.9},
		{"pods/s until all virtual pods Running, ÷ had the syncer used no CPU",
			fmt.Sprintf("%.2f", running), rate(r.n, bound.running), "≥ 0.9", running >= 0.9},
		{"pods/s until all virtual pods Running, ÷ plain client's pods Running",
			fmt.Sprintf("%.2f", plain), rate(r.n, r.plain.running), "≥ 0.45", plain >= 0.45},
		{"burst p99 virtual create → physical exists",
			ms(createP99), ms(createBound), "≤ 1.2 × bound", createBound > 0 && createP99 <= createBound*12/10},
		{"burst p99 physical Running → virtual Running (bound: p99 of the status write)",
			ms(runP99), ms(writeP99), "≤ bound + 1s", writeP99 > 0 && runP99 <= writeP99+time.Second},
		{"syncer's share of all processes' CPU in the burst",
			fmt.Sprintf("%.1f %%", 100*bound.share), "", "≤ 8 %", bound.share <= 0.08},
	}
}

// rate is n pods over d, as pods/s.
func rate(n float64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f pods/s", n/d.Seconds())
}

// statusWrites merges the syncer's request-time histograms of its writes of
// pod status to the virtual apiserver (the series are "cluster verb
// resource").
func statusWrites(requests map[string]benchenv.Histogram) benchenv.Histogram {
	merged := benchenv.Histogram{Buckets: map[float64]float64{}}
	for key, h := range requests {
		if !strings.HasPrefix(key, "virtual ") || !strings.HasSuffix(key, " pods/status") {
			continue
		}
		merged.Sum += h.Sum
		merged.Count += h.Count
		for upper, count := range h.Buckets {
			merged.Buckets[upper] += count
		}
	}
	return merged
}

// printTargets prints each target beside its bound, with whether it is
// met, and the flags the run changed from the shipped defaults.
func printTargets(w io.Writer, targets []target, changed []string) {
	fmt.Fprintln(w, "\ntarget\tsyncer\tbound (same run)\ttarget\tmet")
	for _, t := range targets {
		met := "yes"
		if !t.met {
			met = "NO"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.figure, t.value, t.bound, t.want, met)
	}
	flags := "none (the shipped defaults)"
	if len(changed) > 0 {
		flags = strings.Join(changed, " ")
	}
	fmt.Fprintf(w, "syncer flags changed from the shipped defaults\t%s\t\t\t\n", flags)
}
