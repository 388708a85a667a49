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
	"runtime"
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
	// settleRequests, settleCPU and settleWall are the same from the end
	// of the churn until every node showed its capacity and the figures
	// were read: whether the settling waited on the syncer or on a machine
	// busy with the churn's backlog.
	settleRequests benchenv.APIRequests
	settleCPU      map[string]float64
	settleWall     time.Duration
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

	fmt.Printf("\nThe settling alone (%.1f s from the end of the churn until the figures were read):\n", r.settleWall.Seconds())
	fmt.Printf("  node status writes at the virtual API server: %.0f (%.2f per node)\n",
		r.settleRequests.Total(isStatusWrite), r.settleRequests.Total(isStatusWrite)/float64(cfg.nodes))
	benchenv.PrintCPU("CPU of every process in the settling:", []string{"settling"},
		[]map[string]float64{r.settleCPU}, []float64{r.settleWall.Seconds()}, "s")
	fmt.Printf("All processes kept %.2f of the machine's %d cores busy on average in the settling.\n",
		benchenv.CoresBusy(r.settleCPU, r.settleWall), runtime.NumCPU())
}

// isStatusWrite tells the successful writes of a node's status.
func isStatusWrite(k benchenv.APIRequest) bool {
	return k.Resource == "nodes/status" && k.Verb != "GET" && strings.HasPrefix(k.Code, "2")
}

// onNodes tells the requests on nodes and their subresources.
func onNodes(k benchenv.APIRequest) bool { return strings.Split(k.Resource, "/")[0] == "nodes" }
