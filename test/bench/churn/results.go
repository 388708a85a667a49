package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

type results struct {
	cfg          config
	achievedRate float64
	settle       time.Duration
	writes       writeFigures
	// requests are the virtual API server's requests over the churn and
	// the settling.
	requests benchenv.APIRequests
	// cpu is the CPU seconds of every process over the same window.
	cpu map[string]float64
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
	fmt.Fprintf(w, "node status writes refused with 409 at the virtual API server\t%.0f\t0\n", r.requests.Total(func(k benchenv.APIRequest) bool {
		return k.Resource == "nodes/status" && benchenv.IsConflict(k)
	}))
	fmt.Fprintf(w, "other node writes refused with 409 (any writer: the controller-manager patches taints too)\t%.0f\t\n", r.requests.Total(func(k benchenv.APIRequest) bool {
		return k.Resource == "nodes" && benchenv.IsConflict(k)
	}))
	fmt.Fprintf(w, "churn stopped → every virtual node shows its capacity (s)\t%.1f\t≤ 2\n", r.settle.Seconds())
	w.Flush()
	fmt.Println("\nStatus changes of the virtual nodes by writer (field manager), as the watch saw them:")
	for _, k := range slices.Sorted(maps.Keys(r.writes.byWriter)) {
		fmt.Printf("  %-40s %d\n", k, r.writes.byWriter[k])
	}
	nodes := benchenv.APIRequests{}
	for k, v := range r.requests {
		if onNodes(k) {
			nodes[k] = v
		}
	}
	benchenv.PrintAPIRequests("Virtual API server requests on nodes over the churn and the settling (its apiserver_request_total):",
		[]string{"total"}, []benchenv.APIRequests{nodes}, []float64{1})
	benchenv.PrintCPU("CPU of every process over the churn and the settling:", []string{"churn"},
		[]map[string]float64{r.cpu}, []float64{r.achievedRate * cfg.duration.Seconds()}, "pod")
}

// onNodes tells the requests on nodes and their subresources.
func onNodes(k benchenv.APIRequest) bool { return strings.Split(k.Resource, "/")[0] == "nodes" }
