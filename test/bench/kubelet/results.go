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
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

type results struct {
	logs    []logRound
	exec    execTimes
	follows followResult
}

func (r results) print(cfg config) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nKubelet API of virtual nodes: kwok serves the physical kubelet API; floors straight from the physical cluster, same run\n\n")
	fmt.Fprintln(w, "figure\tvirtual\tfloor\tratio / difference\ttarget")
	var ratios []float64
	for i, l := range r.logs {
		mb := float64(l.bytes) / 1e6
		ratio := l.direct.Seconds() / l.virtual.Seconds()
		ratios = append(ratios, ratio)
		fmt.Fprintf(w, "kubectl logs %.0f MB, round %d (MB/s)\t%.1f\t%.1f\t%.2f\t\n", mb, i+1, mb/l.virtual.Seconds(), mb/l.direct.Seconds(), ratio)
	}
	if len(ratios) > 0 {
		fmt.Fprintf(w, "log throughput, median of %d rounds (virtual / straight)\t\t\t%.2f\t≥ 0.8\n", len(ratios), median(ratios))
	}
	e := r.exec
	v50, v99 := percentile(e.virtual, 50), percentile(e.virtual, 99)
	s50, s99 := percentile(e.syncer, 50), percentile(e.syncer, 99)
	d50, d99 := percentile(e.direct, 50), percentile(e.direct, 99)
	fmt.Fprintf(w, "exec round trip p50 (ms), %d each way\t%.1f\t%.1f\t%+.1f\t\n", len(e.virtual), ms(v50), ms(d50), ms(v50-d50))
	fmt.Fprintf(w, "exec round trip p99 (ms)\t%.1f\t%.1f\t%+.1f\t< 20 ms overhead\n", ms(v99), ms(d99), ms(v99-d99))
	fmt.Fprintf(w, "  of it, straight to the syncer's kubelet API: p50 / p99 (ms)\t%.1f / %.1f\t%.1f / %.1f\t%+.1f / %+.1f\t\n", ms(s50), ms(s99), ms(d50), ms(d99), ms(s50-d50), ms(s99-d99))
	fmt.Fprintf(w, "  of it, the virtual apiserver's hop: p50 / p99 (ms)\t\t\t%+.1f / %+.1f\t\n", ms(v50-s50), ms(v99-s99))
	f := r.follows
	fmt.Fprintf(w, "%d logs -f open: syncer RSS (MiB)\t%.1f\t%.1f at rest\t+%.1f\t< 50 MiB growth\n", cfg.streams, f.rssOpen, f.rssBefore, f.rssOpen-f.rssBefore)
	fmt.Fprintf(w, "%d logs -f opened: still open at the client (/ in the syncer) after a few s\t%d / %.0f\t%d\t\t%d\n", cfg.streams, f.clientsOpen, f.openStreams, f.floorOpen, cfg.streams)
	fmt.Fprintf(w, "%d logs -f open: syncer goroutines\t%.0f\t%.0f at rest\t%+.0f\t\n", cfg.streams, f.goroutinesOpen, f.goroutinesBefore, f.goroutinesOpen-f.goroutinesBefore)
	fmt.Fprintf(w, "%d logs -f open: physical log requests in flight\t%.0f\t%.0f at rest\t\t\n", cfg.streams, f.physicalStreams, f.physicalStreamsBefore)
	fmt.Fprintf(w, "after they closed (%.1f s): syncer goroutines\t%.0f\t%.0f at rest\t%+.0f\t≈ 0\n", f.closeSettle.Seconds(), f.goroutinesAfter, f.goroutinesBefore, f.goroutinesAfter-f.goroutinesBefore)
	fmt.Fprintf(w, "after they closed: syncer open log streams / physical log requests in flight\t%.0f / %.0f\t0 / %.0f\t\t0 left\n", f.openStreamsAfter, f.physicalStreamsAfter, f.physicalStreamsBefore)
	fmt.Fprintf(w, "after they closed: syncer RSS (MiB)\t%.1f\t%.1f at rest\t%+.1f\t\n", f.rssAfter, f.rssBefore, f.rssAfter-f.rssBefore)
	fmt.Fprintf(w, "after idle connections timed out (100 s): syncer goroutines\t%.0f\t%.0f at rest\t%+.0f\t≈ 0\n", f.goroutinesIdle, f.goroutinesBefore, f.goroutinesIdle-f.goroutinesBefore)
	w.Flush()
	if f.endedEarly != "" || f.floorEndedEarly != "" {
		fmt.Printf("\nlogs -f streams that ended before the client closed them: through the virtual cluster %q; straight %q\n", f.endedEarly, f.floorEndedEarly)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentile is the nearest-rank percentile p of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank-1, 0)]
}

func median(xs []float64) float64 {
	sorted := slices.Clone(xs)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}
