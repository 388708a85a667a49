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
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
)

// followResult is what concurrent logs -f streams cost the syncer and
// what they leave behind.
type followResult struct {
	rssBefore, rssOpen, rssAfter float64
	// goroutines of the syncer before, while open and after they closed.
	goroutinesBefore, goroutinesOpen, goroutinesAfter float64
	// openStreams is the syncer's open log streams while open and after;
	// physicalStreams the physical apiserver's log requests in flight.
	openStreams, openStreamsAfter float64
	// clientsOpen is how many of the client's streams were still open when
	// the figures were taken; endedEarly says why the first one that ended
	// before it was closed did.
	clientsOpen int64
	endedEarly  string
	// floorOpen and floorEndedEarly are the same for streams straight
	// from the physical cluster.
	floorOpen       int64
	floorEndedEarly string
	// goroutinesIdle is the syncer's goroutines once idle connections
	// have timed out too.
	goroutinesIdle                        float64
	physicalStreams, physicalStreamsAfter float64
	physicalStreamsBefore                 float64
	closeSettle                           time.Duration
}

// concurrentFollows opens cfg.streams logs -f streams through the virtual
// cluster, waits until each has its first line, measures, closes them all
// and waits until the syncer and the physical apiserver hold none.
func (b *bench) concurrentFollows(ctx context.Context) (followResult, error) {
	var r followResult
	var err error
	benchenv.Logf("concurrent follows: the syncer at rest")
	if r.rssBefore, _, err = b.syncer.Footprint(ctx, 5*time.Second); err != nil {
		return r, err
	}
	if err := b.scrape(ctx, &r.goroutinesBefore, nil, &r.physicalStreamsBefore); err != nil {
		return r, err
	}

	benchenv.Logf("concurrent follows: the floor, %d logs -f streams straight from the physical cluster", b.cfg.streams)
	floor, err := openFollows(ctx, b.physKube, mount, b.physicalPod, b.cfg.streams)
	if err != nil {
		return r, fmt.Errorf("straight: %w", err)
	}
	time.Sleep(5 * time.Second)
	r.floorOpen, r.floorEndedEarly = floor.open.Load(), floor.endedEarly()
	floor.close()

	benchenv.Logf("concurrent follows: opening %d logs -f streams through the virtual cluster", b.cfg.streams)
	follows, err := openFollows(ctx, b.virtualKube, appNamespace, podName, b.cfg.streams)
	if err != nil {
		return r, fmt.Errorf("through the virtual cluster: %w", err)
	}
	defer follows.close()
	if r.rssOpen, _, err = b.syncer.Footprint(ctx, 2*time.Second); err != nil {
		return r, err
	}
	r.clientsOpen, r.endedEarly = follows.open.Load(), follows.endedEarly()
	if err := b.scrape(ctx, &r.goroutinesOpen, &r.openStreams, &r.physicalStreams); err != nil {
		return r, err
	}

	benchenv.Logf("concurrent follows: closing them")
	follows.close()
	start := time.Now()
	_, err = benchenv.WaitUntil(ctx, start, time.Minute, "the streams close in the syncer and the physical apiserver", func(ctx context.Context) (bool, string, error) {
		if err := b.scrape(ctx, &r.goroutinesAfter, &r.openStreamsAfter, &r.physicalStreamsAfter); err != nil {
			return false, "", err
		}
		return r.openStreamsAfter == 0 && r.physicalStreamsAfter <= r.physicalStreamsBefore,
			fmt.Sprintf("syncer %v open, physical %v in flight", r.openStreamsAfter, r.physicalStreamsAfter), nil
	})
	r.closeSettle = time.Since(start)
	if err != nil {
		// Reported in the table: what is left is the figure.
		benchenv.Logf("%v", err)
	}
	// Idle HTTP connections and their goroutines close over a few seconds.
	if r.rssAfter, _, err = b.syncer.Footprint(ctx, 5*time.Second); err != nil {
		return r, err
	}
	if err := b.scrape(ctx, &r.goroutinesAfter, &r.openStreamsAfter, &r.physicalStreamsAfter); err != nil {
		return r, err
	}
	// The virtual apiserver keeps its connections to the kubelet API open
	// for reuse, up to its idle timeout (90 s); past it, the syncer's
	// goroutines must be back to where they were.
	benchenv.Logf("concurrent follows: waiting out idle connections (100 s)")
	select {
	case <-ctx.Done():
		return r, ctx.Err()
	case <-time.After(100 * time.Second):
	}
	return r, b.scrape(ctx, &r.goroutinesIdle, nil, nil)
}

// scrape reads the syncer's goroutines and open log streams, and the
// physical apiserver's log requests in flight; nil pointers are skipped.
func (b *bench) scrape(ctx context.Context, goroutines, openStreams, physicalStreams *float64) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.metricsAddr+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	syncerMetrics, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if goroutines != nil {
		*goroutines = metricValue(string(syncerMetrics), "go_goroutines")
	}
	if openStreams != nil {
		*openStreams = metricValue(string(syncerMetrics), "kubeocean_kubelet_api_open_streams", `operation="logs"`)
	}
	if physicalStreams != nil {
		physical, err := b.physKube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			return err
		}
		*physicalStreams = metricValue(string(physical), "apiserver_longrunning_requests", `resource="pods"`, `subresource="log"`)
	}
	return nil
}

// followSet is n logs -f streams of one pod, each read to the end.
type followSet struct {
	open   atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	// ended is why the first stream that ended before close did.
	ended string
}

// openFollows opens n logs -f streams of namespace/pod and returns once
// each has its first line.
func openFollows(ctx context.Context, kube kubernetes.Interface, namespace, pod string, n int) (*followSet, error) {
	streamCtx, cancel := context.WithCancel(ctx)
	f := &followSet{cancel: cancel}
	started := make(chan error, n)
	for range n {
		f.wg.Go(func() {
			body, err := kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, Follow: true}).Stream(streamCtx)
			if err != nil {
				started <- err
				return
			}
			defer func() { _ = body.Close() }()
			first := make([]byte, len(kwokkubelet.LogLines[0]))
			if _, err := io.ReadFull(body, first); err != nil {
				started <- err
				return
			}
			f.open.Add(1)
			started <- nil
			defer f.open.Add(-1)
			_, err = io.Copy(io.Discard, body)
			if streamCtx.Err() == nil {
				f.mu.Lock()
				if f.ended == "" {
					f.ended = fmt.Sprintf("ended by the server (read error: %v)", err)
				}
				f.mu.Unlock()
			}
		})
	}
	for range n {
		if err := <-started; err != nil {
			f.close()
			return nil, fmt.Errorf("a logs -f stream: %w", err)
		}
	}
	return f, nil
}

func (f *followSet) endedEarly() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

// close ends every stream and waits for their readers.
func (f *followSet) close() {
	f.cancel()
	f.wg.Wait()
}
