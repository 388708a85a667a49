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

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

type results struct {
	floorCreate, floorUpdate              time.Duration
	nodesReady, policyChange, foreignPods time.Duration
	// nodesSchedulable is when every virtual node had also lost the
	// not-ready taint admission puts on new nodes.
	nodesSchedulable            time.Duration
	rssEmpty, rssNodes, rssFull float64
	cpuEmpty, cpuNodes, cpuFull float64
	// lendRequests and changeRequests are the syncer's API requests while
	// lending the nodes and while the policy change reached them.
	lendRequests, changeRequests map[string]float64
	// change and floorWrite are what the policy change and the floor's
	// status writes cost the virtual apiserver and every process.
	change, floorWrite phase
}

func (r results) print(cfg config) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	gc := "its default"
	if cfg.gcPercent > 0 {
		gc = fmt.Sprint(cfg.gcPercent)
	}
	fmt.Fprintf(w, "\nBottom-up syncer: %d physical nodes, %d foreign pods, client QPS %v / burst %d per cluster, --gc-percent %s\n\n",
		cfg.nodes, cfg.nodes*cfg.podsPerNode, cfg.qps, cfg.burst, gc)
	fmt.Fprintln(w, "figure\tsyncer\tfloor\tratio\ttarget")
	fmt.Fprintf(w, "%d virtual nodes Ready after lending (s)\t%.1f\t%.1f\t%.2f\t≤ 2\n",
		cfg.nodes, r.nodesReady.Seconds(), r.floorCreate.Seconds(), r.nodesReady.Seconds()/r.floorCreate.Seconds())
	fmt.Fprintf(w, "%d virtual nodes also schedulable, without the admission's not-ready taint (s)\t%.1f\t\t\t\n", cfg.nodes, r.nodesSchedulable.Seconds())
	fmt.Fprintf(w, "policy change on every node (s)\t%.1f\t%.1f\t%.2f\t≤ 2\n",
		r.policyChange.Seconds(), r.floorUpdate.Seconds(), r.policyChange.Seconds()/r.floorUpdate.Seconds())
	fmt.Fprintf(w, "foreign pods created → capacity shown (s)\t%.1f\t\t\t\n", r.foreignPods.Seconds())
	fmt.Fprintf(w, "syncer RSS, empty physical cluster (MiB)\t%.1f\t\t\t\n", r.rssEmpty)
	fmt.Fprintf(w, "syncer RSS, %d nodes lent, no foreign pods (MiB)\t%.1f\t\t\t\n", cfg.nodes, r.rssNodes)
	fmt.Fprintf(w, "syncer RSS, nodes + foreign pods (MiB)\t%.1f\t\t%.2f× empty, %.2f× nodes only\t≤ 150 MiB, < 2× empty\n",
		r.rssFull, r.rssFull/r.rssEmpty, r.rssFull/r.rssNodes)
	fmt.Fprintf(w, "syncer CPU at rest: empty / nodes / full (%% of a core)\t%.1f / %.1f / %.1f\t\t\t\n", r.cpuEmpty, r.cpuNodes, r.cpuFull)
	w.Flush()
	printRequests("lending", r.lendRequests, cfg.nodes)
	printRequests("the policy change", r.changeRequests, cfg.nodes)
	n := float64(cfg.nodes)
	phases := []string{"policy change", "floor"}
	benchenv.PrintAPIRequests("Virtual apiserver, requests per node (apiserver_request_total, every client's: the benchmark polls nodes with LISTs);\n"+
		"the floor writes one status per node, the syncer's ideal path:", phases,
		[]benchenv.APIRequests{r.change.requests, r.floorWrite.requests}, []float64{n, n})
	benchenv.PrintCPU("CPU of every process:", phases, []map[string]float64{r.change.cpu, r.floorWrite.cpu}, []float64{n, n}, "node")
}

// printRequests lists the syncer's API requests per node during a phase
// (the floors write one node and one Lease per node, then one status).
func printRequests(phase string, requests map[string]float64, nodes int) {
	keys := slices.Sorted(maps.Keys(requests))
	fmt.Printf("\nSyncer API requests per node during %s:\n", phase)
	for _, k := range keys {
		fmt.Printf("  %-50s %.2f\n", k, requests[k]/float64(nodes))
	}
}
