package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

func printResults(cfg config, baseline, bound, full footprint, podsRunning time.Duration, cpu map[string]float64) {
	perBinding := func(f func(footprint) float64) float64 { return (f(bound) - f(baseline)) / float64(cfg.bindings) }
	perThousand := func(f func(footprint) float64) float64 { return (f(full) - f(bound)) / (float64(cfg.pods) / 1000) }
	rss := func(f footprint) float64 { return f.rssMiB }
	heap := func(f footprint) float64 { return f.heapMiB }
	cpuOf := func(f footprint) float64 { return f.cpuPercent }

	fmt.Printf("\nkubeocean-manager, in-process syncers: %d bindings × %d lent nodes; %d pods on %d nodes of the virtual cluster's own\n\n",
		cfg.bindings, cfg.nodes, cfg.pods, cfg.ownNodes)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "at rest\tRSS MiB\tlive heap MiB\tCPU %\tvirtual pods cached\t")
	for _, row := range []struct {
		name string
		f    footprint
	}{{"no binding (baseline)", baseline}, {fmt.Sprintf("%d bindings", cfg.bindings), bound},
		{fmt.Sprintf("%d bindings + %d unrelated pods", cfg.bindings, cfg.pods), full}} {
		cached := "n/a"
		if row.f.cachedPods >= 0 {
			cached = fmt.Sprintf("%.0f", row.f.cachedPods)
		}
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%.1f\t%s\t\n", row.name, row.f.rssMiB, row.f.heapMiB, row.f.cpuPercent, cached)
	}
	fmt.Fprintf(w, "per binding (%d lent nodes)\t%+.2f\t%+.2f\t%+.2f\t\t\n", cfg.nodes, perBinding(rss), perBinding(heap), perBinding(cpuOf))
	fmt.Fprintf(w, "per 1,000 unrelated pods (target ≈ 0)\t%+.2f\t%+.2f\t%+.2f\t\t\n", perThousand(rss), perThousand(heap), perThousand(cpuOf))
	_ = w.Flush()

	fmt.Printf("\n%d unrelated pods Running after %v; CPU seconds meanwhile:\n", cfg.pods, podsRunning.Round(time.Second))
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, name := range slices.Sorted(maps.Keys(cpu)) {
		fmt.Fprintf(w, "%s\t%.1f\t\n", name, cpu[name])
	}
	_ = w.Flush()
}
