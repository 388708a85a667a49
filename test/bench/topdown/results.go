package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

type results struct {
	floorExist, floorRunning, exist, running time.Duration
	writes, idleWrites                       map[string]float64
	createLatency, statusLatency             []time.Duration
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return sorted[i]
}

func isWrite(key string) bool {
	verb := strings.Fields(key)[1]
	return verb == "create" || verb == "update" || verb == "patch" || verb == "delete"
}

func (r results) print(cfg config) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	n := float64(cfg.pods)
	fmt.Fprintf(w, "\nTop-down syncer: %d pods sharing a ConfigMap and a Secret on %d virtual nodes, physical client QPS %v / burst %d\n\n",
		cfg.pods, cfg.nodes, cfg.qps, cfg.burst)
	fmt.Fprintln(w, "figure\tsyncer\tfloor\tratio\ttarget")
	fmt.Fprintf(w, "pods/s until all physical pods exist\t%.0f\t%.0f\t%.2f\t≥ 0.5\n",
		n/r.exist.Seconds(), n/r.floorExist.Seconds(), r.floorExist.Seconds()/r.exist.Seconds())
	fmt.Fprintf(w, "pods/s until all virtual pods Running\t%.0f\t%.0f\t%.2f\t≥ 0.5\n",
		n/r.running.Seconds(), n/r.floorRunning.Seconds(), r.floorRunning.Seconds()/r.running.Seconds())
	fmt.Fprintf(w, "virtual create → physical create at %.0f/s, p50 / p99\t%v / %v\t\t\tp99 < 1s\n", cfg.rate,
		percentile(r.createLatency, 0.5).Round(time.Millisecond), percentile(r.createLatency, 0.99).Round(time.Millisecond))
	fmt.Fprintf(w, "physical Running → virtual Running, p50 / p99\t%v / %v\t\t\t\n",
		percentile(r.statusLatency, 0.5).Round(time.Millisecond), percentile(r.statusLatency, 0.99).Round(time.Millisecond))
	w.Flush()

	fmt.Printf("\nSyncer writes per pod in the throughput phase (from kubeocean_client_requests_total):\n")
	printWrites(r.writes, n)
	fmt.Printf("\nSyncer writes during %v idle:\n", cfg.idle)
	printWrites(r.idleWrites, 1)
}

func printWrites(writes map[string]float64, per float64) {
	var keys []string
	for k := range writes {
		if isWrite(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		fmt.Println("  none")
	}
	for _, k := range keys {
		fmt.Printf("  %-60s %8.2f\n", k, writes[k]/per)
	}
}
