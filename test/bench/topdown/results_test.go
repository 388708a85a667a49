package main

import (
	"testing"
	"time"
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
