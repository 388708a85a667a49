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
	"text/tabwriter"
	"time"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

type results struct {
	// n is the burst's pods; changedFlags the syncer's flags set away
	// from the shipped defaults.
	n                            float64
	changedFlags                 []string
	floorExist, floorRunning     time.Duration
	floor                        window
	plain                        plain
	burst                        burst
	createLatency, statusLatency latency
	steady, idle                 window
}

func (r results) print(cfg config) {
	n := float64(cfg.pods)
	b := r.burst
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	workload := "a service-account token, a ConfigMap and a Secret"
	if !cfg.tokens {
		workload = "a ConfigMap and a Secret, no token"
	}
	fmt.Fprintf(w, "\nTop-down syncer: %d pods with %s on %d virtual nodes, physical client QPS %v / burst %v (syncer and floor)\n",
		cfg.pods, workload, cfg.nodes, qpsOr(cfg.qps, shippedQPS), qpsOr(float32(cfg.burst), shippedBurst))
	printTargets(w, r.targets(), r.changedFlags)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "figure\tsyncer\tfloor\tratio\ttarget")
	fmt.Fprintf(w, "pods/s until all physical pods exist\t%.1f\t%.1f\t%.2f\t≥ 0.5\n",
		n/b.exist.Seconds(), n/r.floorExist.Seconds(), r.floorExist.Seconds()/b.exist.Seconds())
	fmt.Fprintf(w, "pods/s until all virtual pods Running (floor: physical)\t%.1f\t%.1f\t%.2f\t≥ 0.6\n",
		n/b.running.Seconds(), n/r.floorRunning.Seconds(), r.floorRunning.Seconds()/b.running.Seconds())
	fmt.Fprintf(w, "burst: virtual create → physical exists, p50 / p99\t%v\t\t\tp99 < 5s\n", b.createLatency)
	fmt.Fprintf(w, "burst: physical Running → virtual Running, p50 / p99\t%v\t\t\tp99 < 2s\n", b.runLatency)
	fmt.Fprintf(w, "burst: physical exists → physical Running (kwok), p50 / p99\t%v\t\t\t\n", b.kubeletLatency)
	fmt.Fprintf(w, "steady %.0f/s: virtual create → physical exists, p50 / p99\t%v\t\t\tp99 < 1s\n", cfg.rate, r.createLatency)
	fmt.Fprintf(w, "steady %.0f/s: physical Running → virtual Running, p50 / p99\t%v\t\t\t\n", cfg.rate, r.statusLatency)
	fmt.Fprintf(w, "syncer CPU per synced pod (ms)\t%.2f\t\t\t≤ 2\n", b.window.cpu["syncer"]*1000/n)
	bound := b.withoutSyncerCPU()
	fmt.Fprintf(w, "syncer's share of all processes' CPU in the burst\t%.0f %%\t\t\t\n", 100*bound.share)
	fmt.Fprintf(w, "had the syncer used no CPU: pods/s until all physical pods exist / until all virtual pods Running\t%.1f / %.1f\t\t%.2f / %.2f\t\n",
		n/bound.exist.Seconds(), n/bound.running.Seconds(), r.floorExist.Seconds()/bound.exist.Seconds(), r.floorRunning.Seconds()/bound.running.Seconds())
	fmt.Fprintf(w, "had the syncer used no CPU: burst virtual create → physical exists, p99 (estimate)\t%v\t\t\t\n", bound.createP99.Round(time.Millisecond))
	fmt.Fprintf(w, "live GETs of configmaps per pod on the virtual apiserver\t%.2f\t%.2f\t\t0\n",
		get(b.window.virtual, "configmaps")/n, get(r.floor.virtual, "configmaps")/n)
	fmt.Fprintf(w, "HTTP 409 on secret creates (physical apiserver)\t%.0f\t%.0f\t\t0\n",
		conflicts(b.window.physical, "POST", "secrets"), conflicts(r.floor.physical, "POST", "secrets"))
	fmt.Fprintf(w, "HTTP 409s, virtual / physical apiserver\t%.0f / %.0f\t%.0f / %.0f\t\t0\n",
		b.window.virtual.Total(benchenv.IsConflict), b.window.physical.Total(benchenv.IsConflict),
		r.floor.virtual.Total(benchenv.IsConflict), r.floor.physical.Total(benchenv.IsConflict))
	fmt.Fprintf(w, "requests per pod, virtual apiserver (no watches)\t%.2f\t%.2f\t\t\n", work(b.window.virtual)/n, work(r.floor.virtual)/n)
	fmt.Fprintf(w, "requests per pod, physical apiserver (no watches)\t%.2f\t%.2f\t\t\n", work(b.window.physical)/n, work(r.floor.physical)/n)
	fmt.Fprintf(w, "syncer RSS before → after the burst (MiB)\t%.1f → %.1f\t\t\t\n", b.rssBefore, b.rssAfter)
	fmt.Fprintf(w, "syncer RSS growth per 1,000 synced pods (MiB)\t%.1f\t\t\t≤ 15\n", (b.rssAfter-b.rssBefore)*1000/n)
	fmt.Fprintf(w, "  of the RSS, heap spans in use / free heap held / stacks / runtime / binary (MiB)\t%s → %s\t\t\t\n", b.memBefore, b.memAfter)
	fmt.Fprintf(w, "syncer live heap before → after the burst, objects / spans holding them (MiB)\t%.1f / %.1f → %.1f / %.1f\t\t\t\n",
		b.heapBefore.Objects, b.heapBefore.Spans, b.heapAfter.Objects, b.heapAfter.Spans)
	fmt.Fprintf(w, "syncer live heap growth per 1,000 synced pods, objects / spans (MiB)\t%.1f / %.1f\t\t\t\n",
		(b.heapAfter.Objects-b.heapBefore.Objects)*1000/n, (b.heapAfter.Spans-b.heapBefore.Spans)*1000/n)
	w.Flush()
	r.printDetails(cfg)
}

// print prints the figures of the deletion of every pod.
func (d deletion) print() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "figure\tsyncer\t\t\ttarget")
	fmt.Fprintf(w, "delete all %d virtual pods: s until gone, virtual / physical / nothing of the binding left (copies keep a 30 s grace)\t%.1f / %.1f / %.1f\t\t\t\n",
		d.pods, d.virtualGone.Seconds(), d.physicalGone.Seconds(), d.cleanGone.Seconds())
	fmt.Fprintf(w, "after the deletion: left virtual pods / physical pods / copies / virtual finalizers\t%v\t\t\t0 / 0 / 0 / 0\n", d.left)
	fmt.Fprintf(w, "deletion: syncer CPU per pod (ms)\t%.2f\t\t\t\n", d.window.cpu["syncer"]*1000/max(float64(d.pods), 1))
	w.Flush()
	deleted := float64(max(d.pods, 1))
	benchenv.PrintAPIRequests(fmt.Sprintf("Deletion of %d pods, requests per pod (apiserver_request_total):", d.pods), []string{"virtual", "physical"},
		[]benchenv.APIRequests{d.window.virtual, d.window.physical}, []float64{deleted, deleted})
	fmt.Printf("\nSyncer's own client counter in the deletion, per pod:\n")
	printCounter(d.window.syncer, deleted)
	benchenv.PrintCPU(fmt.Sprintf("CPU in the deletion (%.1f s of wall time):", d.window.elapsed.Seconds()), []string{"deletion"},
		[]map[string]float64{d.window.cpu}, []float64{deleted}, "pod")
}

func (r results) printDetails(cfg config) {
	n := float64(cfg.pods)
	b := r.burst

	phases := []string{"syncer burst", "floor", "plain floor"}
	fmt.Printf("\nThe apiservers count every client: in the burst the benchmark's own %d pod creates (POST pods on the virtual\n"+
		"apiserver) and kwok's status updates are in; in the floor the benchmark is the plain client.\n", cfg.pods)
	benchenv.PrintAPIRequests("Virtual apiserver, requests per pod (apiserver_request_total):", phases,
		[]benchenv.APIRequests{b.window.virtual, r.floor.virtual, r.plain.window.virtual}, []float64{n, n, n})
	benchenv.PrintAPIRequests("Physical apiserver, requests per pod (apiserver_request_total):", phases,
		[]benchenv.APIRequests{b.window.physical, r.floor.physical, r.plain.window.physical}, []float64{n, n, n})
	fmt.Printf("\nSyncer's own client counter in the burst, per pod (kubeocean_client_requests_total):\n")
	printCounter(b.window.syncer, n)
	b.window.waits.print()

	benchenv.PrintCPU(fmt.Sprintf("CPU of every process, per synced pod beside the floors' (burst %.1f s, floor %.1f s, plain floor %.1f s of wall time):",
		b.window.elapsed.Seconds(), r.floor.elapsed.Seconds(), r.plain.window.elapsed.Seconds()),
		phases, []map[string]float64{b.window.cpu, r.floor.cpu, r.plain.window.cpu}, []float64{n, n, n}, "pod")
	fmt.Printf("All processes kept %.2f of the machine's %d cores busy on average in the burst, %.2f in the floor, %.2f in the plain floor.\n",
		benchenv.CoresBusy(b.window.cpu, b.window.elapsed), runtime.NumCPU(), benchenv.CoresBusy(r.floor.cpu, r.floor.elapsed),
		benchenv.CoresBusy(r.plain.window.cpu, r.plain.window.elapsed))

	steady := float64(cfg.steadyPods)
	benchenv.PrintCPU(fmt.Sprintf("CPU of every process in the steady phase (%d pods at %.0f/s, %.1f s of wall time until all ran):",
		cfg.steadyPods, cfg.rate, r.steady.elapsed.Seconds()), []string{"steady"}, []map[string]float64{r.steady.cpu}, []float64{steady}, "pod")
	fmt.Printf("All processes kept %.2f of the machine's %d cores busy on average in the steady phase.\n",
		benchenv.CoresBusy(r.steady.cpu, r.steady.elapsed), runtime.NumCPU())

	fmt.Printf("\nDuring %v idle:\n", cfg.idle)
	benchenv.PrintAPIRequests("Requests in the whole idle period:", []string{"virtual", "physical"},
		[]benchenv.APIRequests{r.idle.virtual, r.idle.physical}, []float64{1, 1})
	fmt.Printf("\nSyncer's own client counter in the whole idle period:\n")
	printCounter(r.idle.syncer, 1)
	benchenv.PrintCPU("CPU in the idle period:", []string{"idle"}, []map[string]float64{r.idle.cpu}, []float64{r.idle.elapsed.Minutes()}, "min")
}

// qpsOr is v, or the shipped default when v is 0.
func qpsOr(v float32, shipped float32) float32 {
	if v > 0 {
		return v
	}
	return shipped
}

// get counts the reads of one object of resource (GET, any code).
func get(r benchenv.APIRequests, resource string) float64 {
	return r.Total(func(k benchenv.APIRequest) bool { return k.Verb == "GET" && k.Resource == resource })
}

func conflicts(r benchenv.APIRequests, verb, resource string) float64 {
	return r.Total(func(k benchenv.APIRequest) bool { return k.Verb == verb && k.Resource == resource && k.Code == "409" })
}

// work counts the requests but watches and probes.
func work(r benchenv.APIRequests) float64 {
	return r.Total(func(k benchenv.APIRequest) bool { return !benchenv.IsWatch(k) && k.Resource != "(none)" })
}

func printCounter(requests map[string]float64, per float64) {
	if len(requests) == 0 {
		fmt.Println("  none")
	}
	for _, k := range slices.Sorted(maps.Keys(requests)) {
		fmt.Printf("  %-60s %8.3f\n", k, requests[k]/per)
	}
}

// print shows where the syncer's work waited in a window: the mean time an
// item spent in each queue and in each reconcile, and each kind of request
// on the apiservers, with how many there were.
func (w syncerWaits) print() {
	fmt.Printf("\nWhere the syncer waited in the burst (mean ms, and count):\n")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, part := range []struct {
		title  string
		series map[string]benchenv.Histogram
	}{
		{"queue", w.queue}, {"reconcile", w.reconcile}, {"request", w.requests},
	} {
		for _, name := range slices.Sorted(maps.Keys(part.series)) {
			h := part.series[name]
			if h.Count < 10 {
				continue
			}
			fmt.Fprintf(tw, "%s %s\t%.1f\t%.0f\t\n", part.title, name, h.Mean()*1000, h.Count)
		}
	}
	tw.Flush()
}

// cpuBound is what the burst could have reached on this machine, in this
// run, had the syncer used no CPU and made the same requests.
type cpuBound struct {
	// share is the syncer's part of the CPU all processes used.
	share float64
	// exist and running are the burst's times with the syncer's share
	// taken out: the rest of the work at the burst's average cores busy.
	exist, running time.Duration
	// createP99 is the p99 from virtual create to physical pod of pods
	// created when they were, handed to the physical cluster in order at
	// that pace.
	createP99 time.Duration
}

// withoutSyncerCPU estimates the burst's figures from the CPU the other
// processes needed: while every process together keeps the machine's
// cores busy (the burst's "cores busy"), the burst cannot end before their
// work is done, whatever the syncer does, and a pod reaches the physical
// cluster after the pods created ahead of it. When the estimate misses a
// target, no change to the syncer's own work can meet it on that machine:
// only fewer requests or more cores.
func (b burst) withoutSyncerCPU() cpuBound {
	var all float64
	for _, s := range b.window.cpu {
		all += s
	}
	if all == 0 || len(b.created) == 0 {
		return cpuBound{exist: b.exist, running: b.running}
	}
	share := b.window.cpu["syncer"] / all
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * (1 - share)) }
	bound := cpuBound{share: share, exist: scale(b.exist), running: scale(b.running)}
	step := bound.exist / time.Duration(len(b.created))
	waits := make([]time.Duration, len(b.created))
	var done time.Duration
	for i, created := range b.created {
		done = max(done, created) + step
		waits[i] = done - created
	}
	slices.Sort(waits)
	bound.createP99 = latency{values: waits}.percentile(0.99)
	return bound
}
