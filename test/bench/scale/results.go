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
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"
)

func printResults(cfg config, readings []footprint, podsRunning time.Duration, cpu map[string]float64) {
	baseline, bound, pods, secrets := readings[0], readings[1], readings[2], readings[3]
	per := func(from, to footprint, n float64) footprint {
		return footprint{rssMiB: (to.rssMiB - from.rssMiB) / n, heapMiB: (to.heapMiB - from.heapMiB) / n,
			cpuPercent: (to.cpuPercent - from.cpuPercent) / n}
	}

	process := "kubeocean-manager, in-process syncers"
	if cfg.syncerBinary != "" {
		process = "kubeocean-syncer alone (deployment mode)"
	}
	fmt.Printf("\n%s: %d bindings × %d lent nodes; %d pods on %d nodes of the virtual cluster's own; %d unrelated Secrets\n\n",
		process, cfg.bindings, cfg.nodes, cfg.pods, cfg.ownNodes, cfg.secrets)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "at rest\tRSS MiB\tlive heap MiB\tCPU %\tvirtual pods cached\t")
	for i, name := range []string{"no binding (baseline)", fmt.Sprintf("%d bindings", cfg.bindings),
		fmt.Sprintf("+ %d unrelated pods", cfg.pods), fmt.Sprintf("+ %d unrelated Secrets", cfg.secrets)} {
		if i == 0 && cfg.syncerBinary != "" {
			continue // a syncer does not run without its binding
		}
		f := readings[i]
		cached := "n/a"
		if f.cachedPods >= 0 {
			cached = fmt.Sprintf("%.0f", f.cachedPods)
		}
		fmt.Fprintf(w, "%s\t%.1f\t%.1f\t%.1f\t%s\t\n", name, f.rssMiB, f.heapMiB, f.cpuPercent, cached)
	}
	rows := []struct {
		name string
		f    footprint
	}{
		{fmt.Sprintf("per binding (%d lent nodes)", cfg.nodes), per(baseline, bound, float64(cfg.bindings))},
		{"per 1,000 unrelated pods (target ≈ 0)", per(bound, pods, float64(cfg.pods)/1000)},
		{"per 1,000 unrelated Secrets (target ≈ 0)", per(pods, secrets, float64(cfg.secrets)/1000)},
	}
	if cfg.syncerBinary != "" {
		rows = rows[1:]
	}
	for _, row := range rows {
		fmt.Fprintf(w, "%s\t%+.2f\t%+.2f\t%+.2f\t\t\n", row.name, row.f.rssMiB, row.f.heapMiB, row.f.cpuPercent)
	}
	_ = w.Flush()

	fmt.Printf("\n%d unrelated pods Running after %v; CPU seconds meanwhile:\n", cfg.pods, podsRunning.Round(time.Second))
	w = tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, name := range slices.Sorted(maps.Keys(cpu)) {
		fmt.Fprintf(w, "%s\t%.1f\t\n", name, cpu[name])
	}
	_ = w.Flush()
}
