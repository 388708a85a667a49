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

// Command churn measures how the bottom-up syncer follows foreign-pod churn
// (pods Kubeocean does not run, coming and going on lent physical nodes)
// and prints its figures (docs/scaling.md, "What grows with what"):
//
//   - status writes per virtual node per second, on average and the most of
//     one node in any one second, counted by a watch on the virtual nodes;
//   - node writes and 409 Conflicts at the virtual API server, from its own
//     apiserver_request_total;
//   - seconds from the end of the churn until every virtual node shows the
//     capacity the pods left on its physical node leave free;
//   - the CPU seconds of every process over the churn and the settling,
//     and over the settling alone, with its status writes and how many
//     cores all processes kept busy in it.
//
// Pods are created at --rate per second for --duration, each deleted
// --lifetime after its creation. The syncer runs as the real
// kubeocean-syncer binary. Run it with `make bench-churn`.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	bindingName = "churn"
	clusterID   = "churn"
	appsNS      = "churn-apps"
	nodeCPU     = "8"
	podCPU      = "10m"
)

type config struct {
	nodes              int
	rate               int
	duration, lifetime time.Duration
	syncerBinary       string
	syncerArgs         string
	qps                float32
	burst              int
}

func main() {
	var cfg config
	flag.IntVar(&cfg.nodes, "nodes", 10, "physical nodes lent")
	flag.IntVar(&cfg.rate, "rate", 200, "foreign pods created per second")
	flag.DurationVar(&cfg.duration, "duration", time.Minute, "how long pods are created")
	flag.DurationVar(&cfg.lifetime, "lifetime", 5*time.Second, "how long after its creation each foreign pod is deleted")
	flag.StringVar(&cfg.syncerBinary, "syncer", "bin/kubeocean-syncer", "path of the kubeocean-syncer binary")
	flag.StringVar(&cfg.syncerArgs, "syncer-args", "", "more arguments for the syncer, space separated (e.g. --node-status-update-interval=2s)")
	qps := flag.Float64("qps", 500, "client QPS of the syncer and of the churn's client, towards each cluster")
	flag.IntVar(&cfg.burst, "burst", 1000, "client burst of the syncer and of the churn's client")
	flag.Parse()
	cfg.qps = float32(*qps)
	benchenv.Main(30*time.Minute, func(ctx context.Context) error { return run(ctx, cfg) })
}

func init() { klog.SetOutput(os.Stderr) }

func physicalNodeName(i int) string { return fmt.Sprintf("churn-node-%04d", i) }

type bench struct {
	cfg                   config
	virtual, physical     *controlplane.Cluster
	virtualKube, physKube kubernetes.Interface
	syncer                *benchenv.Syncer
}

func run(ctx context.Context, cfg config) error {
	benchenv.Logf("starting a virtual cluster (with controller-manager) and a physical cluster (with kwok)")
	clusters, err := controlplane.StartParallel(ctx,
		controlplane.Options{Name: "churn-virtual", ControllerManager: true},
		controlplane.Options{Name: "churn-physical", Kwok: true},
	)
	if err != nil {
		return err
	}
	vc, pc := clusters[0].Config(), clusters[1].Config()
	vc.QPS, vc.Burst, pc.QPS, pc.Burst = cfg.qps, cfg.burst, cfg.qps, cfg.burst
	b := &bench{cfg: cfg, virtual: clusters[0], physical: clusters[1],
		virtualKube: kubernetes.NewForConfigOrDie(vc), physKube: kubernetes.NewForConfigOrDie(pc)}
	for _, c := range clusters {
		if err := testenv.InstallCRDs(ctx, c.Config()); err != nil {
			return err
		}
	}
	if err := b.lend(ctx); err != nil {
		return err
	}
	defer b.syncer.Stop()

	watcher, err := watchStatusWrites(ctx, b.virtualKube)
	if err != nil {
		return err
	}
	defer watcher.stop()
	before, err := benchenv.ScrapeAPIServer(ctx, b.virtual)
	if err != nil {
		return err
	}
	processes := benchenv.ClusterProcesses(b.syncer, clusters...)
	cpuBefore := processes.SampleCPU()
	watcher.start()
	alive, achieved, err := b.churn(ctx)
	if err != nil {
		return err
	}
	stopped := time.Now()
	cpuStopped := processes.SampleCPU()
	atStop, err := benchenv.ScrapeAPIServer(ctx, b.virtual)
	if err != nil {
		return err
	}
	settle, err := b.waitCapacity(ctx, stopped, alive)
	if err != nil {
		return err
	}
	writes := watcher.finish()
	cpuAfter := processes.SampleCPU()
	after, err := benchenv.ScrapeAPIServer(ctx, b.virtual)
	if err != nil {
		return err
	}
	if keep := os.Getenv("KUBEOCEAN_BENCH_KEEP_LOG"); keep != "" {
		if data, err := os.ReadFile(b.syncer.LogPath); err == nil {
			_ = os.WriteFile(keep, data, 0o644)
		}
	}
	r := results{
		cfg: cfg, achievedRate: achieved, settle: settle, writes: writes,
		requests:       after.Sub(before),
		cpu:            benchenv.CPUSeconds(cpuBefore, cpuAfter),
		settleRequests: after.Sub(atStop),
		settleCPU:      benchenv.CPUSeconds(cpuStopped, cpuAfter),
		settleWall:     time.Since(stopped),
	}
	r.print()
	return nil
}

// lend creates the physical nodes, binds the physical cluster, lends every
// node with a policy and runs the syncer until the virtual nodes are Ready.
func (b *bench) lend(ctx context.Context) error {
	n := b.cfg.nodes
	benchenv.Logf("creating %d kwok nodes in the physical cluster", n)
	if err := benchenv.ForEach(n, func(i int) error {
		_, err := b.physKube.CoreV1().Nodes().Create(ctx, testenv.KwokNode(physicalNodeName(i), nodeCPU, "32Gi", map[string]string{"suite": "churn"}), metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	if _, err := benchenv.WaitUntil(ctx, time.Now(), 10*time.Minute, "kwok makes the physical nodes Ready", func(ctx context.Context) (bool, string, error) {
		ready, err := benchenv.CountReady(ctx, b.physKube, "suite=churn")
		return ready == n, fmt.Sprintf("%d/%d Ready", ready, n), err
	}); err != nil {
		return err
	}
	if err := benchenv.Bind(ctx, b.virtual, b.physical, bindingName, clusterID, "churn-mount"); err != nil {
		return err
	}
	if _, err := b.physKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: appsNS}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "churn"},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: bindingName},
	}
	if _, err := kubeoceanclient.NewForConfigOrDie(b.physical.Config()).KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return err
	}
	qps, burst := fmt.Sprint(b.cfg.qps), fmt.Sprint(b.cfg.burst)
	args := []string{"--kube-api-qps=" + qps, "--kube-api-burst=" + burst,
		"--physical-kube-api-qps=" + qps, "--physical-kube-api-burst=" + burst,
		"--workers=8", "--health-probe-bind-address=0", "--metrics-bind-address=0"}
	args = append(args, strings.Fields(b.cfg.syncerArgs)...)
	var err error
	if b.syncer, err = benchenv.StartSyncer(b.cfg.syncerBinary, b.virtual, bindingName, args...); err != nil {
		return err
	}
	_, err = benchenv.WaitUntil(ctx, time.Now(), 10*time.Minute, "virtual nodes Ready", func(ctx context.Context) (bool, string, error) {
		ready, err := benchenv.CountReady(ctx, b.virtualKube, kubeoceanv1alpha1.LabelClusterID+"="+clusterID)
		return ready == n, fmt.Sprintf("%d/%d virtual nodes Ready", ready, n), err
	})
	return err
}

// churn creates foreign pods at the configured rate for the configured
// duration, round-robin over the nodes, and deletes each one lifetime after
// its creation was due. It returns how many pods it left on each node and
// the creation rate it achieved.
func (b *bench) churn(ctx context.Context) (alive []int64, achieved float64, err error) {
	cfg := b.cfg
	total := int(cfg.duration.Seconds() * float64(cfg.rate))
	benchenv.Logf("churn: %d foreign pods/s for %v (%d pods), each deleted %v after its creation", cfg.rate, cfg.duration, total, cfg.lifetime)
	alive = make([]int64, cfg.nodes)
	pods := b.physKube.CoreV1().Pods(appsNS)

	type job struct {
		i      int
		delete bool
	}
	jobs := make(chan job, 4*cfg.rate)
	var (
		wg       sync.WaitGroup
		firstErr atomic.Pointer[error]
		created  atomic.Int64
	)
	for range 64 {
		wg.Go(func() {
			for j := range jobs {
				name, node := fmt.Sprintf("churn-%06d", j.i), j.i%cfg.nodes
				var err error
				if j.delete {
					err = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
					if err == nil {
						atomic.AddInt64(&alive[node], -1)
					}
				} else {
					_, err = pods.Create(ctx, testenv.KwokPod(appsNS, name, physicalNodeName(node), podCPU, "16Mi", nil), metav1.CreateOptions{})
					if err == nil {
						atomic.AddInt64(&alive[node], 1)
						created.Add(1)
					}
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
				}
			}
		})
	}

	// Every 10 ms, queue the creations and deletions that are due.
	start := time.Now()
	ticker := time.NewTicker(10 * time.Millisecond)
	nextCreate, nextDelete := 0, 0
	for nextCreate < total {
		select {
		case <-ctx.Done():
			close(jobs)
			wg.Wait()
			return nil, 0, ctx.Err()
		case now := <-ticker.C:
			elapsed := now.Sub(start)
			for ; nextCreate < total && time.Duration(nextCreate)*time.Second/time.Duration(cfg.rate) <= elapsed; nextCreate++ {
				jobs <- job{i: nextCreate}
			}
			for ; nextDelete < nextCreate && time.Duration(nextDelete)*time.Second/time.Duration(cfg.rate)+cfg.lifetime <= elapsed; nextDelete++ {
				jobs <- job{i: nextDelete, delete: true}
			}
		}
	}
	ticker.Stop()
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	if p := firstErr.Load(); p != nil {
		return nil, 0, fmt.Errorf("churn: %w", *p)
	}
	achieved = float64(created.Load()) / elapsed.Seconds()
	benchenv.Logf("churn done in %v: %.0f pods/s created, %d pods left", elapsed.Round(time.Millisecond), achieved, total-nextDelete)
	return alive, achieved, nil
}

// waitCapacity waits until every virtual node shows what the pods left on
// its physical node leave free, and returns how long that took from start.
func (b *bench) waitCapacity(ctx context.Context, start time.Time, alive []int64) (time.Duration, error) {
	want := map[string]resource.Quantity{}
	perPod := resource.MustParse(podCPU)
	for i, n := range alive {
		free := resource.MustParse(nodeCPU)
		free.Sub(*resource.NewMilliQuantity(n*perPod.MilliValue(), resource.DecimalSI))
		want[physicalNodeName(i)] = free
	}
	return benchenv.WaitUntil(ctx, start, 5*time.Minute, "every virtual node shows its capacity", func(ctx context.Context) (bool, string, error) {
		nodes, err := b.virtualKube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + clusterID})
		if err != nil {
			return false, "", err
		}
		right := 0
		for _, n := range nodes.Items {
			w, ok := want[n.Annotations[kubeoceanv1alpha1.AnnotationPhysicalNodeName]]
			if got := n.Status.Allocatable[corev1.ResourceCPU]; ok && got.Cmp(w) == 0 {
				right++
			}
		}
		return right == len(alive), fmt.Sprintf("%d/%d right", right, len(alive)), nil
	})
}

// statusWrites counts, from a watch on the virtual nodes, the updates that
// changed a node's status, per node and per second since start.
type statusWrites struct {
	w    watch.Interface
	done chan struct{}

	mu      sync.Mutex
	started time.Time
	last    map[string]corev1.NodeStatus
	// perSecond[node][second] counts the node's status writes in that
	// second since start.
	perSecond map[string]map[int]int
	total     int
	// byWriter counts status changes by the field manager that made them.
	byWriter map[string]int
	// lastWrite is when the syncer's last status write of each node was
	// seen; minGap the shortest time between two of one node.
	lastWrite map[string]time.Time
	minGap    time.Duration
}

// statusWriter names the field manager of the node's latest status write.
func statusWriter(node *corev1.Node) string {
	var latest *metav1.ManagedFieldsEntry
	for i, m := range node.ManagedFields {
		if m.Subresource == "status" && m.Time != nil && (latest == nil || !m.Time.Before(latest.Time)) {
			latest = &node.ManagedFields[i]
		}
	}
	if latest == nil {
		return "unknown"
	}
	return latest.Manager
}

func watchStatusWrites(ctx context.Context, kube kubernetes.Interface) (*statusWrites, error) {
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + clusterID})
	if err != nil {
		return nil, err
	}
	w, err := kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{
		LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + clusterID, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return nil, err
	}
	s := &statusWrites{w: w, done: make(chan struct{}), last: map[string]corev1.NodeStatus{}, perSecond: map[string]map[int]int{}, byWriter: map[string]int{}, lastWrite: map[string]time.Time{}}
	for _, n := range list.Items {
		s.last[n.Name] = n.Status
	}
	go s.run()
	return s, nil
}

func (s *statusWrites) run() {
	defer close(s.done)
	for ev := range s.w.ResultChan() {
		node, ok := ev.Object.(*corev1.Node)
		if !ok || ev.Type != watch.Modified {
			continue
		}
		s.mu.Lock()
		if !equality.Semantic.DeepEqual(s.last[node.Name], node.Status) && !s.started.IsZero() {
			writer := statusWriter(node)
			s.byWriter[writer]++
			if strings.HasPrefix(writer, "kubeocean-syncer") {
				now := time.Now()
				if prev, ok := s.lastWrite[node.Name]; ok && (s.minGap == 0 || now.Sub(prev) < s.minGap) {
					s.minGap = now.Sub(prev)
				}
				s.lastWrite[node.Name] = now
				second := int(now.Sub(s.started) / time.Second)
				if s.perSecond[node.Name] == nil {
					s.perSecond[node.Name] = map[int]int{}
				}
				s.perSecond[node.Name][second]++
				s.total++
			}
		}
		s.last[node.Name] = node.Status
		s.mu.Unlock()
	}
}

func (s *statusWrites) start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = time.Now()
}

// writeFigures are the status writes seen from start to the end of the
// churn plus the settling.
type writeFigures struct {
	total int
	// window is from start until the figures were taken.
	window time.Duration
	// maxPerNodeSecond is the most status writes of one node in one second.
	maxPerNodeSecond int
	// byWriter counts the status changes of every writer.
	byWriter map[string]int
	// minGap is the shortest time between two status writes of one node
	// by the syncer, as the watch delivered them.
	minGap time.Duration
}

func (s *statusWrites) finish() writeFigures {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := writeFigures{total: s.total, window: time.Since(s.started), byWriter: maps.Clone(s.byWriter), minGap: s.minGap}
	for _, seconds := range s.perSecond {
		for _, n := range seconds {
			f.maxPerNodeSecond = max(f.maxPerNodeSecond, n)
		}
	}
	return f
}

func (s *statusWrites) stop() {
	s.w.Stop()
	<-s.done
}
