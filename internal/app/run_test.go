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

package app

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunAllStopsEverythingWhenOneFails(t *testing.T) {
	var stopped atomic.Int32
	waitForCancel := func(ctx context.Context) error {
		<-ctx.Done()
		stopped.Add(1)
		return nil
	}
	failure := errors.New("caches did not sync")
	err := RunAll(context.Background(),
		Runnable{Name: "a", Run: waitForCancel},
		Runnable{Name: "b", Run: waitForCancel},
		Runnable{Name: "broken", Run: func(context.Context) error { return failure }},
	)
	if !errors.Is(err, failure) {
		t.Fatalf("RunAll returned %v, want the failure", err)
	}
	if stopped.Load() != 2 {
		t.Fatalf("%d runnables stopped, want 2", stopped.Load())
	}
}

func TestRunAllReturnsNilOnCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	err := RunAll(ctx, Runnable{Name: "a", Run: func(ctx context.Context) error { <-ctx.Done(); return nil }})
	if err != nil {
		t.Fatalf("RunAll returned %v on cancel", err)
	}
}

func TestFlags(t *testing.T) {
	opts := NewOptions("kubeocean-syncer")
	fs := Command{Options: opts}.Flags()
	err := fs.Parse([]string{
		"--kubeconfig=/tmp/kc", "--leader-elect=true", "--metrics-bind-address=:9090",
		"--health-probe-bind-address=:9091", "--kube-api-qps=200", "--kube-api-burst=400",
	})
	if err != nil {
		t.Fatal(err)
	}
	if opts.Kubeconfig != "/tmp/kc" || !opts.Election.Enabled || opts.Serving.MetricsBindAddress != ":9090" ||
		opts.Serving.HealthProbeBindAddress != ":9091" || opts.KubeAPIQPS != 200 || opts.KubeAPIBurst != 400 {
		t.Fatalf("flags not applied: %+v", opts)
	}
	if err := fs.Parse([]string{"--kube-api-qps=-1"}); err == nil {
		t.Fatal("a negative QPS was accepted")
	}
}

func TestDefaults(t *testing.T) {
	opts := NewOptions("kubeocean-manager")
	if opts.Serving.MetricsBindAddress != ":8080" || opts.Serving.HealthProbeBindAddress != ":8081" || opts.Election.Enabled {
		t.Fatalf("defaults differ from those docs/operations.md §1 promises: %+v", opts)
	}
}
