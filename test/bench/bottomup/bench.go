package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	bindingName = "bench"
	clusterID   = "bench"
	// parallel is how many requests the floor client and the object
	// generators keep in flight; the QPS limit is what bounds them.
	parallel = 32
)

type bench struct {
	cfg                   config
	virtual, physical     *controlplane.Cluster
	virtualKube, physKube kubernetes.Interface
	physOcean             kubeoceanclient.Interface
	syncer                *exec.Cmd
	syncerDone            chan struct{}
	syncerLog             string
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

// forEach runs fn for 0..n-1 with `parallel` goroutines and returns the
// first error.
func forEach(n int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range parallel {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
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
	logf("floor: a plain client creates %d Ready nodes and Leases in the virtual cluster", n)
	start := time.Now()
	err = forEach(n, func(i int) error {
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
	logf("floor: a plain client updates %d node statuses", n)
	start = time.Now()
	err = forEach(n, func(i int) error {
		// The virtual cluster's node controllers touch new nodes too.
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			node, err := nodes.Get(ctx, fmt.Sprintf("floor-%04d", i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("2")
			_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
			return err
		})
	})
	update = time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	err = forEach(n, func(i int) error {
		name := fmt.Sprintf("floor-%04d", i)
		_ = leases.Delete(ctx, name, metav1.DeleteOptions{})
		return nodes.Delete(ctx, name, metav1.DeleteOptions{})
	})
	return create, update, err
}

// startSyncer binds the physical cluster and runs kubeocean-syncer.
func (b *bench) startSyncer(ctx context.Context) error {
	for _, ns := range []struct {
		kube kubernetes.Interface
		name string
	}{{b.virtualKube, "kubeocean-system"}, {b.physKube, "bench-mount"}, {b.physKube, "bench-apps"}} {
		if _, err := ns.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.name}}, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: "bench-kubeconfig"},
		Data: map[string][]byte{"kubeconfig": b.physical.Kubeconfig}}
	if _, err := b.virtualKube.CoreV1().Secrets("kubeocean-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID: clusterID, MountNamespace: "bench-mount",
			SecretRef: kubeoceanv1alpha1.SecretReference{Name: secret.Name, Namespace: secret.Namespace},
		},
	}
	ocean := kubeoceanclient.NewForConfigOrDie(b.virtual.Config())
	if _, err := ocean.KubeoceanV1alpha1().ClusterBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return err
	}

	logPath := filepath.Join(b.virtual.Dir, "kubeocean-syncer.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	qps, burst := fmt.Sprint(b.cfg.qps), fmt.Sprint(b.cfg.burst)
	b.syncer = exec.Command(b.cfg.syncerBinary,
		"--kubeconfig="+b.virtual.KubeconfigPath, "--cluster-binding="+bindingName,
		"--kube-api-qps="+qps, "--kube-api-burst="+burst,
		"--physical-kube-api-qps="+qps, "--physical-kube-api-burst="+burst,
		"--workers=8", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	b.syncer.Stdout, b.syncer.Stderr = logFile, logFile
	if err := b.syncer.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", b.cfg.syncerBinary, err)
	}
	b.syncerDone = make(chan struct{})
	go func() { _ = b.syncer.Wait(); logFile.Close(); close(b.syncerDone) }()
	logf("syncer running as pid %d, log %s", b.syncer.Process.Pid, logPath)
	b.syncerLog = logPath
	return nil
}

func (b *bench) stopSyncer() {
	if b.syncer == nil || b.syncer.Process == nil {
		return
	}
	_ = b.syncer.Process.Signal(os.Interrupt)
	select {
	case <-b.syncerDone:
	case <-time.After(20 * time.Second):
		_ = b.syncer.Process.Kill()
		<-b.syncerDone
	}
}

// settledFootprint waits for the syncer to settle, then reads its RSS and
// its CPU use over a ten-second window.
func (b *bench) settledFootprint(ctx context.Context) (rssMiB, cpuPercent float64, err error) {
	select {
	case <-time.After(15 * time.Second):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-b.syncerDone:
		return 0, 0, fmt.Errorf("the syncer exited; see its log")
	}
	pid := b.syncer.Process.Pid
	before, err := cpuTicks(pid)
	if err != nil {
		return 0, 0, err
	}
	window := 10 * time.Second
	time.Sleep(window)
	after, err := cpuTicks(pid)
	if err != nil {
		return 0, 0, err
	}
	rss, err := rssKiB(pid)
	if err != nil {
		return 0, 0, err
	}
	const ticksPerSecond = 100 // USER_HZ on Linux
	return float64(rss) / 1024, float64(after-before) / ticksPerSecond / window.Seconds() * 100, nil
}

func rssKiB(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == "VmRSS:" {
			return strconv.ParseInt(fields[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which may contain spaces.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	return utime + stime, nil
}

// waitUntil polls cond every half second and returns how long it took.
func waitUntil(ctx context.Context, start time.Time, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) (time.Duration, error) {
	var progress string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, p, err := cond(ctx)
		progress = p
		return ok, err
	})
	if err != nil {
		return 0, fmt.Errorf("%s: %w (%s)", what, err, progress)
	}
	return time.Since(start), nil
}
