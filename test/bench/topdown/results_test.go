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
	"testing"
	"time"

	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

func TestWithoutSyncerCPU(t *testing.T) {
	b := burst{exist: 8 * time.Second, running: 10 * time.Second}
	b.window.cpu = map[string]float64{"syncer": 1, "virtual/kube-apiserver": 2, "physical/kube-apiserver": 1}
	// 100 pods created at once: handed over one per 60 ms (6 s / 100).
	b.created = make([]time.Duration, 100)
	got := b.withoutSyncerCPU()
	if got.share != 0.25 || got.exist != 6*time.Second || got.running != 7500*time.Millisecond {
		t.Errorf("share, exist, running = %v, %v, %v; want 0.25, 6s, 7.5s", got.share, got.exist, got.running)
	}
	if want := 99 * 60 * time.Millisecond; got.createP99 != want {
		t.Errorf("p99 of pods created at once = %v, want %v", got.createP99, want)
	}

	// Pods created slower than they could be handed over wait one step.
	for i := range b.created {
		b.created[i] = time.Duration(i) * 100 * time.Millisecond
	}
	if got := b.withoutSyncerCPU(); got.createP99 != 60*time.Millisecond {
		t.Errorf("p99 of pods created every 100 ms = %v, want 60ms", got.createP99)
	}

	// Without CPU figures there is nothing to take out.
	b.window.cpu = nil
	if got := b.withoutSyncerCPU(); got.exist != b.exist || got.running != b.running || got.createP99 != 0 {
		t.Errorf("without CPU figures = %+v, want the burst's own times", got)
	}
}

func TestTargetsAgainstTheirBounds(t *testing.T) {
	r := results{n: 100}
	r.burst = burst{exist: 10 * time.Second, running: 12 * time.Second}
	// The syncer used 5 % of the CPU: the bound is 0.95 of each time.
	r.burst.window.cpu = map[string]float64{"syncer": 1, "virtual/kube-apiserver": 19}
	r.burst.created = make([]time.Duration, 100)
	for i := range r.burst.created {
		r.burst.created[i] = time.Duration(i) * 10 * time.Millisecond
	}
	r.burst.createLatency = latency{values: []time.Duration{20 * time.Second, 30 * time.Second}}
	r.burst.runLatency = latency{values: []time.Duration{500 * time.Millisecond, 1200 * time.Millisecond}}
	// The status writes took up to 0.5 s at the p99.
	r.burst.window.waits.requests = map[string]benchenv.Histogram{
		"virtual update pods/status":  {Count: 100, Buckets: map[float64]float64{0.25: 0, 0.5: 100}},
		"physical update pods/status": {Count: 100, Buckets: map[float64]float64{5: 0, 10: 100}},
	}
	r.plain.running = 6 * time.Second // the syncer reaches 0.5 of it

	met := map[string]bool{}
	for _, tg := range r.targets() {
		met[tg.want] = tg.met
	}
	want := map[string]bool{
		"≥ 0.9":         true,  // 0.95 of both bounds
		"≥ 0.45":        true,  // 0.5
		"≤ 1.2 × bound": false, // p99 20 s against an estimate of about 8.5 s (100 pods handed over 95 ms apart)
		"≤ bound + 1s":  true,  // 1.2 s against 0.5 s + 1 s; the physical series is not counted
		"≤ 8 %":         true,
	}
	for k, v := range want {
		if met[k] != v {
			t.Errorf("target %q met = %v, want %v", k, met[k], v)
		}
	}

	// The syncer taking a quarter of the CPU misses the share target, and
	// a Running rate of a third of the plain floor's misses that one.
	r.burst.window.cpu["syncer"] = 7
	r.plain.running = 4 * time.Second
	for _, tg := range r.targets() {
		if (tg.want == "≤ 8 %" || tg.want == "≥ 0.45") && tg.met {
			t.Errorf("target %q %s met, want missed", tg.figure, tg.value)
		}
	}
}
