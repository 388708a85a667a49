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

// Command kubelet measures the kubelet API of virtual nodes on real
// clusters and prints each figure beside its floor, measured in the same
// run (the shared machine's absolute times vary, the ratios hold;
// docs/scaling.md):
//
//   - log throughput: kubectl logs of a large container log through the
//     virtual cluster, beside kubectl logs of the same container straight
//     from the physical cluster;
//   - exec round trips: a command run through the virtual cluster, beside
//     the same command run straight in the physical pod (p50, p99 and
//     their difference);
//   - 200 concurrent logs -f streams through the virtual cluster: the
//     syncer's RSS growth while they are open, and its goroutines, its
//     open streams and the physical apiserver's log requests left once
//     they are closed.
//
// kwok serves the physical nodes' kubelet API (test/kwokkubelet), and the
// syncer runs as the real kubeocean-syncer binary in its own process so
// its RSS and goroutines are its own. Run it with `make bench-kubelet`.
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
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/testenv"
)

type config struct {
	logMB        int
	logRounds    int
	execs        int
	streams      int
	syncerBinary string
}

func main() {
	var cfg config
	flag.IntVar(&cfg.logMB, "log-mb", 60, "size of the container log read by kubectl logs (MB)")
	flag.IntVar(&cfg.logRounds, "log-rounds", 3, "kubectl logs rounds, each straight and through the virtual cluster")
	flag.IntVar(&cfg.execs, "execs", 200, "exec round trips, each straight and through the virtual cluster")
	flag.IntVar(&cfg.streams, "streams", 200, "concurrent logs -f streams")
	flag.StringVar(&cfg.syncerBinary, "syncer", "bin/kubeocean-syncer", "path of the kubeocean-syncer binary")
	flag.Parse()

	benchenv.Main(30*time.Minute, func(ctx context.Context) error { return run(ctx, cfg) })
}

func run(ctx context.Context, cfg config) error {
	dir, err := os.MkdirTemp("", "kubeocean-bench-kubelet-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kwok, err := kwokkubelet.New(dir, "")
	if err != nil {
		return err
	}
	defer kwok.Close()
	benchenv.Logf("starting a virtual cluster (with controller-manager) and a physical cluster (with kwok serving a kubelet API)")
	clusters, err := controlplane.StartParallel(ctx,
		controlplane.Options{Name: "bench-virtual", ControllerManager: true},
		controlplane.Options{Name: "bench-physical", Kwok: true, KwokArgs: kwok.Args},
	)
	if err != nil {
		return err
	}
	for _, c := range clusters {
		if err := testenv.InstallCRDs(ctx, c.Config()); err != nil {
			return err
		}
	}
	b := newBench(cfg, clusters[0], clusters[1], kwok)
	if err := b.setUp(ctx); err != nil {
		return err
	}
	defer b.syncer.Stop()

	var r results
	if r.logs, err = b.logThroughput(ctx); err != nil {
		return fmt.Errorf("log throughput: %w", err)
	}
	if r.exec, err = b.execRoundTrips(ctx); err != nil {
		return fmt.Errorf("exec round trips: %w", err)
	}
	if r.follows, err = b.concurrentFollows(ctx); err != nil {
		return fmt.Errorf("concurrent follows: %w", err)
	}
	r.print(cfg)
	return nil
}

func init() {
	// The control-plane harness and client-go log through klog; keep the
	// benchmark's output to its own progress lines and the results table.
	klog.SetOutput(os.Stderr)
}
