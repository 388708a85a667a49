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

// Command bottomup measures the bottom-up syncer on real clusters and prints
// its figures beside floors measured in the same run (the shared machine's
// absolute times vary, the ratios hold; docs/scaling.md):
//
//   - 1,000 physical nodes lent at once → seconds until 1,000 virtual nodes
//     are Ready, beside a plain client creating 1,000 nodes and Leases
//     straight into the virtual cluster;
//   - one policy change → seconds until every virtual node shows the new
//     capacity, beside a plain client updating 1,000 node statuses;
//   - the syncer's RSS and CPU with an empty physical cluster, and with
//     1,000 nodes and 20,000 pods that are not Kubeocean's.
//
// The syncer runs as the real kubeocean-syncer binary in its own process so
// its RSS is its own. Run it with `make bench-bottomup`.
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
	nodes, podsPerNode int
	qps                float32
	burst              int
	syncerBinary       string
	// heapProfile, when set, is where the syncer's heap profile is saved
	// at the end; its memory statistics are printed too.
	heapProfile string
	// cpuProfile, when set, is where the syncer's CPU profile over the
	// lending and the policy change is saved.
	cpuProfile string
	// gcPercent, when set, is passed to the syncer as --gc-percent.
	gcPercent int
}

func main() {
	var cfg config
	flag.IntVar(&cfg.nodes, "nodes", 1000, "physical nodes")
	flag.IntVar(&cfg.podsPerNode, "pods-per-node", 20, "foreign pods per node for the footprint phase")
	qps := flag.Float64("qps", 500, "client QPS of the syncer and of the floor client, towards each cluster")
	flag.IntVar(&cfg.burst, "burst", 1000, "client burst of the syncer and of the floor client")
	flag.StringVar(&cfg.syncerBinary, "syncer", "bin/kubeocean-syncer", "path of the kubeocean-syncer binary")
	flag.StringVar(&cfg.heapProfile, "heap-profile", "", "save the syncer's heap profile here at the end, and print its memory statistics")
	flag.StringVar(&cfg.cpuProfile, "cpu-profile", "", "save the syncer's CPU profile over the 30 s of the lending and the policy change here")
	flag.IntVar(&cfg.gcPercent, "gc-percent", 0, "run the syncer with this --gc-percent (0: its default)")
	flag.Parse()
	cfg.qps = float32(*qps)

	benchenv.Main(45*time.Minute, func(ctx context.Context) error { return run(ctx, cfg) })
}

func run(ctx context.Context, cfg config) error {
	benchenv.Logf("starting a virtual cluster (with controller-manager) and a physical cluster (with kwok)")
	clusters, err := controlplane.StartParallel(ctx,
		controlplane.Options{Name: "bench-virtual", ControllerManager: true},
		controlplane.Options{Name: "bench-physical", Kwok: true},
	)
	if err != nil {
		return err
	}
	b := newBench(cfg, clusters[0], clusters[1])
	for _, c := range clusters {
		if err := testenv.InstallCRDs(ctx, c.Config()); err != nil {
			return err
		}
	}

	var r results
	if r.floorCreate, r.floorUpdate, err = b.floors(ctx); err != nil {
		return fmt.Errorf("floors: %w", err)
	}
	if err := b.startSyncer(ctx); err != nil {
		return err
	}
	defer b.syncer.Stop()
	if r.rssEmpty, r.cpuEmpty, err = b.syncer.Footprint(ctx, 15*time.Second); err != nil {
		return err
	}
	waitCPUProfile := b.startCPUProfile(ctx)
	before, err := benchenv.ScrapeRequests(b.metricsAddr)
	if err != nil {
		return err
	}
	if r.nodesReady, r.nodesSchedulable, err = b.lendNodes(ctx); err != nil {
		return fmt.Errorf("lending nodes: %w", err)
	}
	lent, err := benchenv.ScrapeRequests(b.metricsAddr)
	if err != nil {
		return err
	}
	r.floorWrite = b.floorWrite
	r.change, err = b.measure(ctx, benchenv.ClusterProcesses(b.syncer, b.virtual, b.physical), func() error {
		r.policyChange, err = b.changePolicy(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("changing the policy: %w", err)
	}
	changed, err := benchenv.ScrapeRequests(b.metricsAddr)
	if err != nil {
		return err
	}
	r.lendRequests, r.changeRequests = benchenv.DiffRequests(before, lent), benchenv.DiffRequests(lent, changed)
	waitCPUProfile()
	if r.rssNodes, r.cpuNodes, err = b.syncer.Footprint(ctx, 15*time.Second); err != nil {
		return err
	}
	if r.foreignPods, err = b.createForeignPods(ctx); err != nil {
		return fmt.Errorf("foreign pods: %w", err)
	}
	if r.rssFull, r.cpuFull, err = b.syncer.Footprint(ctx, 15*time.Second); err != nil {
		return err
	}
	if cfg.heapProfile != "" {
		b.saveHeapProfile(cfg.heapProfile)
	}
	if keep := os.Getenv("KUBEOCEAN_BENCH_KEEP_LOG"); keep != "" {
		if data, err := os.ReadFile(b.syncer.LogPath); err == nil {
			_ = os.WriteFile(keep, data, 0o644)
		}
	}
	r.print(cfg)
	return nil
}

func init() {
	// The control-plane harness and client-go log through klog; keep the
	// benchmark's output to its own progress lines and the results table.
	klog.SetOutput(os.Stderr)
}
