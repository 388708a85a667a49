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
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
)

// snapshot is what the counters say at one moment: both apiservers'
// apiserver_request_total, the syncer's own client counter and the CPU
// time of every process.
type snapshot struct {
	at                time.Time
	virtual, physical benchenv.APIRequests
	syncer            map[string]float64
	waits             syncerWaits
	cpu               benchenv.CPUSample
}

// syncerWaits are the syncer's histograms of where a pod waits: in a
// controller's queue, in its reconcile, and on each apiserver.
type syncerWaits struct {
	queue, reconcile, requests map[string]benchenv.Histogram
}

func scrapeWaits(metricsAddr string) (w syncerWaits, err error) {
	if w.queue, err = benchenv.ScrapeHistograms(metricsAddr, "kubeocean_workqueue_queue_duration_seconds", "name"); err != nil {
		return w, err
	}
	if w.reconcile, err = benchenv.ScrapeHistograms(metricsAddr, "kubeocean_controller_reconcile_duration_seconds", "controller"); err != nil {
		return w, err
	}
	w.requests, err = benchenv.ScrapeHistograms(metricsAddr, "kubeocean_client_request_duration_seconds", "cluster", "verb", "resource")
	return w, err
}

func (w syncerWaits) since(before syncerWaits) syncerWaits {
	return syncerWaits{
		queue:     benchenv.DiffHistograms(before.queue, w.queue),
		reconcile: benchenv.DiffHistograms(before.reconcile, w.reconcile),
		requests:  benchenv.DiffHistograms(before.requests, w.requests),
	}
}

// window is what happened between two snapshots.
type window struct {
	elapsed           time.Duration
	virtual, physical benchenv.APIRequests
	syncer            map[string]float64
	waits             syncerWaits
	cpu               map[string]float64
}

func (b *bench) snapshot(ctx context.Context) (snapshot, error) {
	s := snapshot{at: time.Now(), cpu: b.procs.SampleCPU()}
	var err error
	if s.virtual, err = benchenv.ScrapeAPIServer(ctx, b.virtual); err != nil {
		return s, err
	}
	if s.physical, err = benchenv.ScrapeAPIServer(ctx, b.physical); err != nil {
		return s, err
	}
	if s.syncer, err = benchenv.ScrapeRequests(b.metricsAddr); err != nil {
		return s, err
	}
	s.waits, err = scrapeWaits(b.metricsAddr)
	return s, err
}

// since is the window from before until now.
func (b *bench) since(ctx context.Context, before snapshot) (window, error) {
	after, err := b.snapshot(ctx)
	if err != nil {
		return window{}, err
	}
	return window{
		elapsed:  after.at.Sub(before.at),
		virtual:  after.virtual.Sub(before.virtual),
		physical: after.physical.Sub(before.physical),
		syncer:   benchenv.DiffRequests(before.syncer, after.syncer),
		waits:    after.waits.since(before.waits),
		cpu:      benchenv.CPUSeconds(before.cpu, after.cpu),
	}, nil
}

// profiles collects CPU profiles of the syncer and of both apiservers over
// d into dir, in the background; the returned function waits for them.
// Failures are only reported.
func (b *bench) profiles(ctx context.Context, dir string, d time.Duration) (wait func()) {
	if dir == "" {
		return func() {}
	}
	seconds := fmt.Sprint(int(d.Seconds()))
	done := make(chan struct{}, 3)
	save := func(name string, body io.ReadCloser, err error) {
		defer func() { done <- struct{}{} }()
		if err == nil {
			err = saveTo(dir, name+".pprof", body)
		}
		if err != nil {
			benchenv.Logf("profile of %s: %v", name, err)
		}
	}
	go func() {
		body, err := b.syncerDebug(ctx, "/debug/pprof/profile?seconds="+seconds)
		save("syncer", body, err)
	}()
	for _, c := range []*controlplane.Cluster{b.virtual, b.physical} {
		go func() {
			cfg := c.Config()
			cfg.Timeout = d + 30*time.Second
			kube, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				save(c.Name+"-apiserver", nil, err)
				return
			}
			body, err := kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", seconds).Stream(ctx)
			save(c.Name+"-apiserver", body, err)
		}()
	}
	return func() {
		for range 3 {
			<-done
		}
	}
}

// heapProfile saves the syncer's heap profile into dir as name (nothing
// when dir is ""), to see what the cached pods cost: the profile before
// the burst is the base of the one after (go tool pprof -base).
func (b *bench) heapProfile(ctx context.Context, dir, name string) error {
	if dir == "" {
		return nil
	}
	body, err := b.syncerDebug(ctx, "/debug/pprof/heap")
	if err != nil {
		return err
	}
	return saveTo(dir, name, body)
}

// syncerDebug opens path on the syncer's metrics address (run with
// --profiling).
func (b *bench) syncerDebug(ctx context.Context, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.metricsAddr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// saveTo copies body, which it closes, into the file dir/name.
func saveTo(dir, name string, body io.ReadCloser) error {
	defer body.Close()
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
