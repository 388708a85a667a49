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
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

func resourceQuantity(n int) *resource.Quantity {
	return resource.NewQuantity(int64(n), resource.DecimalSI)
}

// steady creates pods at a steady rate and returns the latencies from
// virtual create to physical create and from physical Running to virtual
// Running, with the CPU every process used meanwhile (read from /proc
// only: scraping the API servers' metrics would cost more CPU than a few
// hundred pods).
func (b *bench) steady(ctx context.Context) (create, status latency, w window, err error) {
	tl, err := follow(ctx, b.virtualKube, b.physKube, "steady")
	if err != nil {
		return create, status, w, err
	}
	defer tl.stop()
	start, cpuBefore := time.Now(), b.procs.SampleCPU()
	benchenv.Logf("latency: %d pods at %.0f/s", b.cfg.steadyPods, b.cfg.rate)
	ticker := time.NewTicker(time.Duration(float64(time.Second) / b.cfg.rate))
	defer ticker.Stop()
	for i := range b.cfg.steadyPods {
		<-ticker.C
		name := fmt.Sprintf("steady-%04d", i)
		pod := benchPod(virtualNS, name, kubeoceanv1alpha1.VirtualNodeName(clusterID, nodeName(i%b.cfg.nodes)), b.cfg.tokens)
		pod.Labels["app"] = "steady"
		go func() {
			if _, err := b.virtualKube.CoreV1().Pods(virtualNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				benchenv.Logf("creating %s: %v", name, err)
				return
			}
			tl.mark(tl.created, name)
		}()
	}
	if _, err := tl.waitFor(ctx, time.Now(), 5*time.Minute, tl.virtualRun, b.cfg.steadyPods, "steady pods Running"); err != nil {
		return create, status, w, err
	}
	w = window{elapsed: time.Since(start), cpu: benchenv.CPUSeconds(cpuBefore, b.procs.SampleCPU())}
	return tl.latencies(tl.created, tl.physicalSeen), tl.latencies(tl.physicalRun, tl.virtualRun), w, nil
}

// idle counts the syncer's writes while nothing changes.
func (b *bench) idle(ctx context.Context) (window, error) {
	benchenv.Logf("idle: counting requests for %v", b.cfg.idle)
	select {
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
		return window{}, ctx.Err()
	}
	before, err := b.snapshot(ctx)
	if err != nil {
		return window{}, err
	}
	select {
	case <-time.After(b.cfg.idle):
	case <-ctx.Done():
		return window{}, ctx.Err()
	}
	return b.since(ctx, before)
}
