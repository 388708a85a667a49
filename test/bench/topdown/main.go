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

// Command topdown measures the top-down syncer on real clusters and prints
// its figures beside a floor measured in the same run (the shared
// machine's absolute times vary, the ratio holds; docs/scaling.md):
//
//   - N pods sharing a ConfigMap and a Secret and, like nearly every real
//     pod, mounting a service-account token (--tokens=false: opted out),
//     bound to virtual nodes → pods/s until all physical pods exist and
//     until all virtual pods are Running, beside a plain client doing the
//     requests of the syncer's ideal path with the same QPS settings: per
//     pod a TokenRequest in the virtual cluster, the token Secret and the
//     pod in the physical cluster;
//   - p50/p99 latency of each pod of that burst and at a steady arrival
//     rate, from virtual create (the create call returned) to physical
//     create, and from physical Running to virtual Running; a pod whose
//     timestamp a watch missed is counted, never given a made-up value;
//   - API requests per pod by verb, resource and code from both
//     apiservers' own apiserver_request_total (every client's, the
//     benchmark's own pod creates included), beside the floor's, with the
//     syncer's own kubeocean_client_requests_total;
//   - CPU seconds of every process (apiservers, etcds, kwok,
//     controller-manager, the syncer and this benchmark) in each measured
//     window, and the syncer's RSS growth, broken down into heap spans,
//     free heap the runtime holds, stacks, the rest of the runtime and the
//     pages of the syncer's binary (those grow the first time a code path
//     runs, not with the pods: 1.3–2.1 MiB of a 2,000-pod burst's
//     growth);
//   - what the burst could have reached had the syncer used no CPU and
//     made the same requests (the other processes' CPU at the burst's
//     cores busy): rates, ratios and the p99 to the physical pod, so that
//     a target this misses is known to need fewer requests or more cores;
//   - a plain floor: an unthrottled client creating the same N pods
//     straight into the physical cluster (no token, nothing else), timed
//     until kwok has them Running, with its CPU;
//   - the targets, each beside the bound it is stated against, from this
//     same run (targets.go);
//   - requests during an idle period;
//   - the deletion of every virtual pod at once: seconds until the pods
//     are gone in both clusters and nothing of the binding is left (its
//     copies in the mount namespace, its finalizers on virtual objects).
//
// --profiles=DIR saves CPU profiles of the syncer and of both apiservers
// taken over the first seconds of the burst, and the syncer's heap profiles
// before the burst and once all its pods run (syncer-before.heap,
// syncer.heap; go tool pprof -base syncer-before.heap shows what the
// burst added).
//
// The syncer runs as the real kubeocean-syncer binary. Run it with
// `make bench-topdown`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

type config struct {
	pods, nodes, steadyPods int
	podWorkers              int
	syncerVerbosity         int
	rate                    float64
	qps                     float32
	burst                   int
	idle                    time.Duration
	syncerBinary            string
	tokens                  bool
	profileDir              string
	profileTime             time.Duration
}

func main() {
	var cfg config
	flag.IntVar(&cfg.pods, "pods", 2000, "pods of the throughput phase")
	flag.IntVar(&cfg.nodes, "nodes", 10, "kwok nodes lent")
	flag.IntVar(&cfg.steadyPods, "steady-pods", 200, "pods of the latency phase")
	flag.Float64Var(&cfg.rate, "rate", 20, "pods per second in the latency phase")
	flag.IntVar(&cfg.podWorkers, "pod-workers", 0, "the syncer's --pod-workers (0: its default)")
	flag.IntVar(&cfg.syncerVerbosity, "syncer-v", 0, "the syncer's log verbosity -v (0: its default); the log is kept with KUBEOCEAN_KEEP_TESTDIR=1")
	qps := flag.Float64("qps", 0, "physical client QPS of the syncer and of the floor client (0: the syncer's default, 300)")
	flag.IntVar(&cfg.burst, "burst", 0, "physical client burst of the syncer and of the floor client (0: the syncer's default, 600)")
	flag.DurationVar(&cfg.idle, "idle", 5*time.Minute, "idle period whose writes are counted")
	flag.StringVar(&cfg.syncerBinary, "syncer", "bin/kubeocean-syncer", "path of the kubeocean-syncer binary")
	flag.BoolVar(&cfg.tokens, "tokens", true, "pods mount a service-account token (false: automountServiceAccountToken: false)")
	flag.StringVar(&cfg.profileDir, "profiles", "", "save CPU profiles of the syncer and both apiservers over the burst, and the syncer's heap profiles before and after it, in this folder")
	flag.DurationVar(&cfg.profileTime, "profile-time", 15*time.Second, "how long the profiles of --profiles run")
	flag.Parse()
	cfg.qps = float32(*qps)
	klog.SetOutput(os.Stderr)

	benchenv.Main(60*time.Minute, func(ctx context.Context) error { return run(ctx, cfg) })
}

func run(ctx context.Context, cfg config) error {
	benchenv.Logf("starting a virtual cluster (with controller-manager) and a physical cluster (with kwok)")
	virtual, physical, err := testenv.StartVirtualAndPhysical(ctx, controlplane.Options{ControllerManager: true}, controlplane.Options{Kwok: true})
	if err != nil {
		return err
	}
	b := newBench(cfg, virtual, physical)
	if err := b.lendNodes(ctx); err != nil {
		return fmt.Errorf("lending nodes: %w", err)
	}
	defer b.syncer.Stop()
	r := results{n: float64(cfg.pods), changedFlags: b.changedFlags}
	if r.floorExist, r.floorRunning, r.floor, err = b.floor(ctx); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	if r.plain, err = b.plainFloor(ctx); err != nil {
		return fmt.Errorf("plain floor: %w", err)
	}
	if r.burst, err = b.throughput(ctx); err != nil {
		return fmt.Errorf("throughput: %w", err)
	}
	if r.createLatency, r.statusLatency, r.steady, err = b.steady(ctx); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	if r.idle, err = b.idle(ctx); err != nil {
		return fmt.Errorf("idle: %w", err)
	}
	r.print(cfg)
	d, err := b.deleteAll(ctx)
	if err != nil {
		return fmt.Errorf("deletion: %w", err)
	}
	d.print()
	return nil
}
