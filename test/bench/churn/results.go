package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

type results struct {
	cfg          config
	achievedRate float64
	settle       time.Duration
	writes       writeFigures
	// requests are the virtual API server's requests over the churn and
	// the settling, by "VERB resource code".
	requests  map[string]float64
	syncerCPU float64
}

func (r results) print() {
	cfg := r.cfg
	seconds := r.writes.window.Seconds()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\nForeign-pod churn: %d physical nodes lent, %d pods/s asked (%.0f achieved) for %v, each deleted after %v; syncer args %q\n\n",
		cfg.nodes, cfg.rate, r.achievedRate, cfg.duration, cfg.lifetime, cfg.syncerArgs)
	fmt.Fprintln(w, "figure\tmeasured\ttarget")
	fmt.Fprintf(w, "syncer status writes per node per second, average over %.0f s\t%.2f\t≤ 1\n", seconds, float64(r.writes.total)/float64(cfg.nodes)/seconds)
	fmt.Fprintf(w, "syncer status writes of one node in one second, most\t%d\t≤ 1\n", r.writes.maxPerNodeSecond)
	fmt.Fprintf(w, "shortest gap between two syncer status writes of one node, as the watch delivered them (s)\t%.2f\t≥ 1 at the syncer\n", r.writes.minGap.Seconds())
	fmt.Fprintf(w, "node writes refused with 409 at the virtual API server\t%.0f\t0\n", r.sum("nodes", "409"))
	fmt.Fprintf(w, "churn stopped → every virtual node shows its capacity (s)\t%.1f\t≤ 2\n", r.settle.Seconds())
	fmt.Fprintf(w, "syncer CPU over the churn (s)\t%.1f\t\n", r.syncerCPU)
	w.Flush()
	fmt.Println("\nStatus changes of the virtual nodes by writer (field manager), as the watch saw them:")
	for _, k := range slices.Sorted(maps.Keys(r.writes.byWriter)) {
		fmt.Printf("  %-40s %d\n", k, r.writes.byWriter[k])
	}
	fmt.Println("\nVirtual API server requests on nodes over the churn and the settling (its apiserver_request_total):")
	for _, k := range slices.Sorted(maps.Keys(r.requests)) {
		if strings.Contains(k, " nodes") {
			fmt.Printf("  %-40s %.0f\n", k, r.requests[k])
		}
	}
}

// sum adds the requests on resource (any subresource) answered with code.
func (r results) sum(resource, code string) float64 {
	total := 0.0
	for k, v := range r.requests {
		f := strings.Fields(k)
		if len(f) == 3 && strings.Split(f[1], "/")[0] == resource && f[2] == code {
			total += v
		}
	}
	return total
}
