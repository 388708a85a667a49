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

// Command scale measures one kubeocean-manager running its syncers
// in-process for several bindings in one virtual cluster, and prints its
// footprint at rest (RSS, live heap after a forced GC, CPU over ten
// seconds):
//
//   - with no binding (the baseline);
//   - with --bindings bindings, each of a physical cluster of its own with
//     --nodes kwok nodes lent: the cost per binding;
//   - with --pods more pods running on the virtual cluster's own kwok nodes
//     (not virtual nodes), which no binding runs: the cost per 1,000 such
//     pods, which should be about nothing (each syncer caches only the
//     pods bound to its virtual nodes);
//   - with --secrets more Secrets no binding references: the cost per
//     1,000, also about nothing (the manager watches only the referenced
//     ones).
//
// --syncer=BINARY measures one kubeocean-syncer process instead, as a
// syncer Deployment runs it: one binding (--bindings is ignored), no
// baseline without a binding, and the same unrelated pods and Secrets.
//
// It also prints what the syncers' caches hold
// (kubeocean_binding_virtual_pods_cached, summed) and the CPU seconds of
// every process while the unrelated pods are created. Run it with
// `make bench-scale`; BENCH_ARGS=--bindings=2 --nodes=20 --pods=2000 for a
// small machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// appsNS holds the unrelated virtual pods.
const appsNS = "scale-apps"

type config struct {
	bindings, nodes, pods, ownNodes int
	secrets                         int
	managerBinary                   string
	// syncerBinary, when set, is measured alone for one binding
	// (deployment mode) instead of the manager.
	syncerBinary string
	settle       time.Duration
	qps          float32
	burst        int
}

func main() {
	var cfg config
	flag.IntVar(&cfg.bindings, "bindings", 5, "bindings, each of its own physical control plane")
	flag.IntVar(&cfg.nodes, "nodes", 200, "kwok nodes lent by each physical cluster")
	flag.IntVar(&cfg.pods, "pods", 10000, "pods running on the virtual cluster's own kwok nodes")
	flag.IntVar(&cfg.secrets, "secrets", 1000, "Secrets no binding references (half of them kubeconfigs), created last")
	flag.IntVar(&cfg.ownNodes, "own-nodes", 50, "kwok nodes of the virtual cluster's own, which run those pods")
	flag.StringVar(&cfg.managerBinary, "manager", "bin/kubeocean-manager", "path of the kubeocean-manager binary")
	flag.StringVar(&cfg.syncerBinary, "syncer", "", "path of a kubeocean-syncer binary: measure it alone for one binding (deployment mode) instead of the manager")
	flag.DurationVar(&cfg.settle, "settle", 20*time.Second, "wait before each footprint reading")
	qps := flag.Float64("qps", 500, "client QPS of the manager and of the benchmark's client, towards each cluster")
	flag.IntVar(&cfg.burst, "burst", 1000, "client burst of the manager and of the benchmark's client")
	flag.Parse()
	cfg.qps = float32(*qps)
	if cfg.syncerBinary != "" {
		cfg.bindings = 1
	}
	benchenv.Main(60*time.Minute, func(ctx context.Context) error { return run(ctx, cfg) })
}

func init() { klog.SetOutput(os.Stderr) }

type bench struct {
	cfg         config
	virtual     *controlplane.Cluster
	physical    []*controlplane.Cluster
	virtualKube kubernetes.Interface
	manager     *benchenv.Syncer
	metricsAddr string
}

// footprint is the manager at rest.
type footprint struct {
	rssMiB, heapMiB, cpuPercent float64
	// cachedPods sums kubeocean_binding_virtual_pods_cached; -1 when the
	// manager shows none.
	cachedPods float64
}

func run(ctx context.Context, cfg config) (err error) {
	b := &bench{cfg: cfg}
	if err := b.startClusters(ctx); err != nil {
		return err
	}
	defer func() {
		if b.manager != nil {
			b.manager.Stop()
		}
	}()
	// baseline stays zero for a syncer: it does not run without its
	// binding.
	var baseline footprint
	if cfg.syncerBinary == "" {
		if err := b.startManager(); err != nil {
			return err
		}
		benchenv.Logf("manager at rest, no binding")
		if baseline, err = b.footprint(ctx); err != nil {
			return err
		}
	}
	for i := range cfg.bindings {
		if err := b.bind(ctx, i); err != nil {
			return fmt.Errorf("binding %d: %w", i, err)
		}
	}
	benchenv.Logf("manager at rest, %d bindings", cfg.bindings)
	bound, err := b.footprint(ctx)
	if err != nil {
		return err
	}
	procs := benchenv.ClusterProcesses(nil, append([]*controlplane.Cluster{b.virtual}, b.physical...)...)
	measured := "manager"
	if cfg.syncerBinary != "" {
		measured = "syncer"
	}
	procs[measured] = b.manager.Pid()
	cpuBefore := procs.SampleCPU()
	took, err := b.createUnrelatedPods(ctx)
	if err != nil {
		return err
	}
	cpu := benchenv.CPUSeconds(cpuBefore, procs.SampleCPU())
	benchenv.Logf("manager at rest, %d bindings and %d unrelated pods", cfg.bindings, cfg.pods)
	full, err := b.footprint(ctx)
	if err != nil {
		return err
	}
	if err := b.createUnrelatedSecrets(ctx); err != nil {
		return err
	}
	benchenv.Logf("manager at rest, %d bindings, %d unrelated pods and %d unrelated Secrets", cfg.bindings, cfg.pods, cfg.secrets)
	secrets, err := b.footprint(ctx)
	if err != nil {
		return err
	}
	printResults(cfg, []footprint{baseline, bound, full, secrets}, took, cpu)
	return nil
}

func (b *bench) startClusters(ctx context.Context) error {
	opts := []controlplane.Options{{Name: "scale-virtual", Kwok: true,
		// kwok runs the virtual cluster's own nodes alone: Kubeocean's
		// virtual nodes are the syncers'.
		KwokArgs: []string{"--manage-all-nodes=false", "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake"}}}
	for i := range b.cfg.bindings {
		opts = append(opts, controlplane.Options{Name: fmt.Sprintf("scale-physical-%d", i), Kwok: true})
	}
	benchenv.Logf("starting a virtual cluster and %d physical clusters, each with kwok", b.cfg.bindings)
	clusters, err := controlplane.StartParallel(ctx, opts...)
	if err != nil {
		return err
	}
	b.virtual, b.physical = clusters[0], clusters[1:]
	vc := b.virtual.Config()
	vc.QPS, vc.Burst = b.cfg.qps, b.cfg.burst
	b.virtualKube = kubernetes.NewForConfigOrDie(vc)
	for _, c := range clusters {
		if err := testenv.InstallCRDs(ctx, c.Config()); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) startManager() error {
	args, err := b.processArgs()
	if err != nil {
		return err
	}
	b.manager, err = benchenv.StartManager(b.cfg.managerBinary, b.virtual, append(args, "--syncer-mode=in-process")...)
	return err
}

// startSyncer runs the syncer of binding alone, as its Deployment would.
func (b *bench) startSyncer(binding string) error {
	args, err := b.processArgs()
	if err != nil {
		return err
	}
	b.manager, err = benchenv.StartSyncer(b.cfg.syncerBinary, b.virtual, binding, args...)
	return err
}

// processArgs are the flags of the measured process: metrics on a free
// address, profiling for the live heap, the client limits.
func (b *bench) processArgs() ([]string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b.metricsAddr = l.Addr().String()
	_ = l.Close()
	return []string{"--metrics-bind-address=" + b.metricsAddr, "--profiling", "--health-probe-bind-address=0",
		fmt.Sprintf("--kube-api-qps=%g", b.cfg.qps), fmt.Sprintf("--kube-api-burst=%d", b.cfg.burst),
		fmt.Sprintf("--physical-kube-api-qps=%g", b.cfg.qps), fmt.Sprintf("--physical-kube-api-burst=%d", b.cfg.burst)}, nil
}

// bind creates the physical cluster's nodes and the policy lending them,
// binds it, and waits until every virtual node is Ready.
func (b *bench) bind(ctx context.Context, i int) error {
	physical := b.physical[i]
	pc := physical.Config()
	pc.QPS, pc.Burst = b.cfg.qps, b.cfg.burst
	kube := kubernetes.NewForConfigOrDie(pc)
	name := fmt.Sprintf("scale-%d", i)
	benchenv.Logf("%s: creating %d kwok nodes, lending them, binding", name, b.cfg.nodes)
	err := benchenv.ForEach(b.cfg.nodes, func(n int) error {
		node := testenv.KwokNode(fmt.Sprintf("node-%04d", n), "8", "32Gi", nil)
		_, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: name}}
	if _, err := kubeoceanclient.NewForConfigOrDie(pc).KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := benchenv.Bind(ctx, b.virtual, physical, name, name, "scale-mount"); err != nil {
		return err
	}
	if b.cfg.syncerBinary != "" {
		if err := b.startSyncer(name); err != nil {
			return err
		}
	}
	took, err := benchenv.WaitUntil(ctx, time.Now(), 15*time.Minute, name+" virtual nodes Ready", func(ctx context.Context) (bool, string, error) {
		ready, err := benchenv.CountReady(ctx, b.virtualKube, kubeoceanv1alpha1.LabelClusterID+"="+name)
		return ready == b.cfg.nodes, fmt.Sprintf("%d/%d virtual nodes Ready", ready, b.cfg.nodes), err
	})
	benchenv.Logf("%s: %d virtual nodes Ready after %v", name, b.cfg.nodes, took.Round(time.Second))
	return err
}

// createUnrelatedPods runs the pods on the virtual cluster's own nodes and
// waits until they are Running.
func (b *bench) createUnrelatedPods(ctx context.Context) (time.Duration, error) {
	benchenv.Logf("creating %d kwok nodes of the virtual cluster's own and %d pods on them", b.cfg.ownNodes, b.cfg.pods)
	start := time.Now()
	err := benchenv.ForEach(b.cfg.ownNodes, func(n int) error {
		node := testenv.KwokNode(fmt.Sprintf("own-node-%04d", n), "1000", "4Ti", nil)
		_, err := b.virtualKube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	if _, err := b.virtualKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appsNS}}, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	err = benchenv.ForEach(b.cfg.pods, func(i int) error {
		pod := testenv.KwokPod(appsNS, fmt.Sprintf("app-%05d", i), fmt.Sprintf("own-node-%04d", i%b.cfg.ownNodes), "10m", "16Mi",
			map[string]string{"app": "scale"})
		pod.Spec.AutomountServiceAccountToken = new(bool)
		_, err := b.virtualKube.CoreV1().Pods(appsNS).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return 0, err
	}
	return benchenv.WaitUntil(ctx, start, 20*time.Minute, "unrelated pods Running", func(ctx context.Context) (bool, string, error) {
		running, err := b.virtualKube.CoreV1().Pods(appsNS).List(ctx, metav1.ListOptions{FieldSelector: "status.phase=Running", ResourceVersion: "0"})
		if err != nil {
			return false, "", err
		}
		return len(running.Items) == b.cfg.pods, fmt.Sprintf("%d/%d Running", len(running.Items), b.cfg.pods), nil
	})
}

// createUnrelatedSecrets creates Secrets of 2 KiB that no binding
// references; every other one holds a kubeconfig key, which the manager
// once kept whole.
func (b *bench) createUnrelatedSecrets(ctx context.Context) error {
	benchenv.Logf("creating %d Secrets no binding references", b.cfg.secrets)
	value := []byte(strings.Repeat("x", 2048))
	return benchenv.ForEach(b.cfg.secrets, func(i int) error {
		key := "data"
		if i%2 == 0 {
			key = "kubeconfig"
		}
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: appsNS, Name: fmt.Sprintf("secret-%05d", i)},
			Data: map[string][]byte{key: value}}
		_, err := b.virtualKube.CoreV1().Secrets(appsNS).Create(ctx, secret, metav1.CreateOptions{})
		return err
	})
}

func (b *bench) footprint(ctx context.Context) (footprint, error) {
	var f footprint
	var err error
	if f.rssMiB, f.cpuPercent, err = b.manager.Footprint(ctx, b.cfg.settle); err != nil {
		return f, err
	}
	heap, err := benchenv.LiveHeap(b.metricsAddr)
	if err != nil {
		return f, err
	}
	f.heapMiB = heap.MiB().Spans
	metrics, err := benchenv.ScrapeGauges(b.metricsAddr, "kubeocean_binding_virtual_pods_cached")
	if err != nil {
		return f, err
	}
	if len(metrics) == 0 && f.rssMiB > 0 {
		f.cachedPods = -1 // a manager without the gauge, or no binding yet
	}
	for _, v := range metrics {
		f.cachedPods += v
	}
	vnodes, err := benchenv.CountReady(ctx, b.virtualKube, kubeoceanv1alpha1.LabelManagedBy+"="+kubeoceanv1alpha1.ManagedByKubeocean)
	if err != nil {
		return f, err
	}
	benchenv.Logf("RSS %.1f MiB, live heap %.1f MiB, CPU %.1f%%, virtual pods cached %.0f, virtual nodes Ready %d (log %s)",
		f.rssMiB, f.heapMiB, f.cpuPercent, f.cachedPods, vnodes, b.manager.LogPath)
	return f, nil
}
