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
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	bindingName = "bench"
	clusterID   = "bench"
)

type bench struct {
	cfg                   config
	virtual, physical     *controlplane.Cluster
	virtualKube, physKube kubernetes.Interface
	physOcean             kubeoceanclient.Interface
	syncer                *benchenv.Syncer
	// metricsAddr serves the syncer's metrics, and its pprof handlers with
	// --heap-profile or --cpu-profile.
	metricsAddr string
	// floorWrite is what the floor's status writes cost: the virtual
	// apiserver's requests and every process's CPU.
	floorWrite phase
}

// phase is what the virtual apiserver served (apiserver_request_total,
// every client's) and what every process spent during a measured phase.
type phase struct {
	requests benchenv.APIRequests
	cpu      map[string]float64
}

// measure runs fn and returns what the phase cost.
func (b *bench) measure(ctx context.Context, procs benchenv.Processes, fn func() error) (phase, error) {
	before, err := benchenv.ScrapeAPIServer(ctx, b.virtual)
	if err != nil {
		return phase{}, err
	}
	cpu := procs.SampleCPU()
	if err := fn(); err != nil {
		return phase{}, err
	}
	after, err := benchenv.ScrapeAPIServer(ctx, b.virtual)
	if err != nil {
		return phase{}, err
	}
	return phase{requests: after.Sub(before), cpu: benchenv.CPUSeconds(cpu, procs.SampleCPU())}, nil
}

func newBench(cfg config, virtual, physical *controlplane.Cluster) *bench {
	vc, pc := virtual.Config(), physical.Config()
	vc.QPS, vc.Burst, pc.QPS, pc.Burst = cfg.qps, cfg.burst, cfg.qps, cfg.burst
	return &bench{
		cfg: cfg, virtual: virtual, physical: physical,
		virtualKube: kubernetes.NewForConfigOrDie(vc), physKube: kubernetes.NewForConfigOrDie(pc),
		physOcean: kubeoceanclient.NewForConfigOrDie(pc),
	}
}

func readyNode(name string, cpu string) *corev1.Node {
	n := testenv.KwokNode(name, cpu, "32Gi", nil)
	delete(n.Annotations, "kwok.x-k8s.io/node") // not kwok's: the floor writes it by hand
	now := metav1.Now()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "Floor",
		LastHeartbeatTime: now, LastTransitionTime: now}}
	return n
}

// floors measures a plain client creating n Ready nodes and their Leases in
// the virtual cluster, then updating n node statuses; it removes them after.
func (b *bench) floors(ctx context.Context) (create, update time.Duration, err error) {
	n := b.cfg.nodes
	nodes := b.virtualKube.CoreV1().Nodes()
	leases := b.virtualKube.CoordinationV1().Leases("kube-node-lease")
	benchenv.Logf("floor: a plain client creates %d Ready nodes and Leases in the virtual cluster", n)
	start := time.Now()
	err = benchenv.ForEach(n, func(i int) error {
		name := fmt.Sprintf("floor-%04d", i)
		if _, err := nodes.Create(ctx, readyNode(name, "8"), metav1.CreateOptions{}); err != nil {
			return err
		}
		_, err := leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
				RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}, metav1.CreateOptions{})
		return err
	})
	create = time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	// The syncer's ideal path is one status write per node, so the floor
	// does one too: a merge patch, which no conflict can turn into a read
	// and a second write.
	benchenv.Logf("floor: a plain client writes %d node statuses, one request each", n)
	patch := []byte(`{"status":{"allocatable":{"cpu":"2"}}}`)
	b.floorWrite, err = b.measure(ctx, benchenv.ClusterProcesses(nil, b.virtual, b.physical), func() error {
		start := time.Now()
		err := benchenv.ForEach(n, func(i int) error {
			_, err := nodes.Patch(ctx, fmt.Sprintf("floor-%04d", i), types.MergePatchType, patch, metav1.PatchOptions{}, "status")
			return err
		})
		update = time.Since(start)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	err = benchenv.ForEach(n, func(i int) error {
		name := fmt.Sprintf("floor-%04d", i)
		_ = leases.Delete(ctx, name, metav1.DeleteOptions{})
		return nodes.Delete(ctx, name, metav1.DeleteOptions{})
	})
	return create, update, err
}

// startSyncer binds the physical cluster and runs kubeocean-syncer.
func (b *bench) startSyncer(ctx context.Context) error {
	if err := benchenv.Bind(ctx, b.virtual, b.physical, bindingName, clusterID, "bench-mount"); err != nil {
		return err
	}
	if _, err := b.physKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-apps"}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	qps, burst := fmt.Sprint(b.cfg.qps), fmt.Sprint(b.cfg.burst)
	var err error
	if b.metricsAddr, err = controlplane.FreeLoopbackAddress(); err != nil {
		return err
	}
	metrics := []string{"--metrics-bind-address=" + b.metricsAddr}
	var env []string
	if b.cfg.heapProfile != "" || b.cfg.cpuProfile != "" {
		metrics = append(metrics, "--profiling")
	}
	if b.cfg.heapProfile != "" {
		// Sample every 8 KiB allocated rather than every 512 KiB, so the
		// profile sees the many small objects the caches are made of. It
		// costs the syncer some memory of its own, so RSS figures of such a
		// run read a little high.
		env = []string{"GODEBUG=memprofilerate=8192"}
	}
	if b.cfg.gcPercent > 0 {
		metrics = append(metrics, fmt.Sprintf("--gc-percent=%d", b.cfg.gcPercent))
	}
	b.syncer, err = benchenv.StartSyncerWithEnv(b.cfg.syncerBinary, b.virtual, bindingName, env, append([]string{
		"--kube-api-qps=" + qps, "--kube-api-burst=" + burst,
		"--physical-kube-api-qps=" + qps, "--physical-kube-api-burst=" + burst,
		"--workers=8", "--health-probe-bind-address=0"}, metrics...)...)
	return err
}

// saveHeapProfile saves the syncer's heap profile to path and prints the
// Go runtime's memory statistics; failures are only reported.
func (b *bench) saveHeapProfile(path string) {
	for _, get := range []struct{ query, to string }{{"", path}, {"?debug=1", ""}} {
		resp, err := http.Get("http://" + b.metricsAddr + "/debug/pprof/heap" + get.query)
		if err != nil {
			benchenv.Logf("heap profile: %v", err)
			return
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			benchenv.Logf("heap profile: %v", err)
			return
		}
		if get.to != "" {
			if err := os.WriteFile(get.to, data, 0o644); err != nil {
				benchenv.Logf("heap profile: %v", err)
			}
			continue
		}
		// The statistics close the debug=1 text, after "# runtime.MemStats".
		if i := strings.Index(string(data), "# runtime.MemStats"); i >= 0 {
			fmt.Fprint(os.Stderr, string(data[i:]))
		}
	}
}

// startCPUProfile starts collecting the syncer's CPU profile for 30 s, which
// covers the lending and the policy change, when asked for; the returned
// function waits for it and saves it. Failures are only reported.
func (b *bench) startCPUProfile(ctx context.Context) (wait func()) {
	if b.cfg.cpuProfile == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.metricsAddr+"/debug/pprof/profile?seconds=30", nil)
		if err != nil {
			benchenv.Logf("cpu profile: %v", err)
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			benchenv.Logf("cpu profile: %v", err)
			return
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if err := os.WriteFile(b.cfg.cpuProfile, data, 0o644); err != nil {
			benchenv.Logf("cpu profile: %v", err)
		}
	}()
	return func() { <-done }
}
