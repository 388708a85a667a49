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

// Package benchenv holds what the benchmark programs share: running the
// real kubeocean-syncer binary against test clusters and measuring its
// footprint, binding a physical cluster, bounded-parallel request loops and
// timed waits.
package benchenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned"
	"github.com/kubeocean/kubeocean/test/controlplane"
)

// Parallel is how many requests the floor clients and the object
// generators keep in flight; the client QPS limit is what bounds them.
const Parallel = 32

// Logf prints a progress line with the time.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// ForEach runs fn for 0..n-1 on Parallel goroutines and returns the first
// error.
func ForEach(n int, fn func(i int) error) error {
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		next  = make(chan int)
	)
	for range Parallel {
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

// WaitUntil polls cond every 250 ms and returns the time since start once
// it holds; the error carries cond's last progress line.
func WaitUntil(ctx context.Context, start time.Time, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) (time.Duration, error) {
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

// Bind creates the kubeconfig Secret and a ClusterBinding for the physical
// cluster, and the mount namespace there (namespaces that exist already,
// from an earlier binding, are fine).
func Bind(ctx context.Context, virtual, physical *controlplane.Cluster, name, clusterID, mount string) error {
	vkube, pkube := virtual.Clientset(), physical.Clientset()
	for _, ns := range []struct {
		kube kubernetes.Interface
		name string
	}{{vkube, "kubeocean-system"}, {pkube, mount}} {
		_, err := ns.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: name + "-kubeconfig"},
		Data: map[string][]byte{"kubeconfig": physical.Kubeconfig}}
	if _, err := vkube.CoreV1().Secrets("kubeocean-system").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID: clusterID, MountNamespace: mount,
			SecretRef: kubeoceanv1alpha1.SecretReference{Name: secret.Name, Namespace: secret.Namespace},
		},
	}
	_, err := kubeoceanclient.NewForConfigOrDie(virtual.Config()).KubeoceanV1alpha1().ClusterBindings().Create(ctx, binding, metav1.CreateOptions{})
	return err
}

// CountReady counts the nodes matching selector whose Ready condition is True.
func CountReady(ctx context.Context, kube kubernetes.Interface, selector string) (int, error) {
	ready, _, err := CountNodes(ctx, kube, selector)
	return ready, err
}

// CountNodes counts the nodes matching selector whose Ready condition is
// True, and of those the schedulable ones: without the not-ready taint
// the API server's admission puts on every new node, which the scheduler
// heeds until it is gone.
func CountNodes(ctx context.Context, kube kubernetes.Interface, selector string) (ready, schedulable int, err error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return 0, 0, err
	}
	for _, n := range nodes.Items {
		if !slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
			return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}) {
			continue
		}
		ready++
		if !slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == corev1.TaintNodeNotReady }) {
			schedulable++
		}
	}
	return ready, schedulable, nil
}

// Syncer is the kubeocean-syncer binary running in its own process.
type Syncer struct {
	cmd     *exec.Cmd
	done    chan struct{}
	LogPath string
}

// StartSyncer runs binary for the binding against the virtual cluster,
// logging to a file in the cluster's folder.
func StartSyncer(binary string, virtual *controlplane.Cluster, binding string, args ...string) (*Syncer, error) {
	return StartSyncerWithEnv(binary, virtual, binding, nil, args...)
}

// StartSyncerWithEnv is StartSyncer with env added to the syncer's
// environment (KEY=value entries).
func StartSyncerWithEnv(binary string, virtual *controlplane.Cluster, binding string, env []string, args ...string) (*Syncer, error) {
	s := &Syncer{LogPath: filepath.Join(virtual.Dir, "kubeocean-syncer.log"), done: make(chan struct{})}
	logFile, err := os.Create(s.LogPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(binary, append([]string{"--kubeconfig=" + virtual.KubeconfigPath, "--cluster-binding=" + binding}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		s.cmd.Env = append(os.Environ(), env...)
	}
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(s.done) }()
	Logf("syncer running as pid %d, log %s", s.cmd.Process.Pid, s.LogPath)
	return s, nil
}

// StartManager runs the kubeocean-manager binary against the virtual
// cluster, logging to a file in the cluster's folder; the Syncer it
// returns measures it like a syncer.
func StartManager(binary string, virtual *controlplane.Cluster, args ...string) (*Syncer, error) {
	s := &Syncer{LogPath: filepath.Join(virtual.Dir, "kubeocean-manager.log"), done: make(chan struct{})}
	logFile, err := os.Create(s.LogPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(binary, append([]string{"--kubeconfig=" + virtual.KubeconfigPath}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() { _ = s.cmd.Wait(); logFile.Close(); close(s.done) }()
	Logf("manager running as pid %d, log %s", s.cmd.Process.Pid, s.LogPath)
	return s, nil
}

// Pid is the syncer's process ID.
func (s *Syncer) Pid() int { return s.cmd.Process.Pid }

// Stop interrupts the syncer and waits for it, killing it after 20 s.
func (s *Syncer) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Footprint waits settle, then reads the syncer's RSS and its CPU use over
// a ten-second window.
func (s *Syncer) Footprint(ctx context.Context, settle time.Duration) (rssMiB, cpuPercent float64, err error) {
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	case <-s.done:
		return 0, 0, fmt.Errorf("the syncer exited; see %s", s.LogPath)
	}
	pid := s.cmd.Process.Pid
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
	return float64(rss) / 1024, float64(after-before) / ticksPerSecond / window.Seconds() * 100, nil
}

func rssKiB(pid int) (int64, error) { return statusKiB(pid, "VmRSS") }

// statusKiB reads one of the memory figures (in KiB) of /proc/PID/status.
func statusKiB(pid int, field string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if fields := strings.Fields(line); len(fields) >= 2 && fields[0] == field+":" {
			return strconv.ParseInt(fields[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", field, pid)
}

func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which may contain spaces.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	return utime + stime, nil
}

// Main runs a benchmark program's run within timeout, stops every control
// plane it started, and exits 1 with the error when run failed.
func Main(timeout time.Duration, run func(ctx context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	err := run(ctx)
	cancel()
	controlplane.StopAll()
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchmark failed: %v\n", err)
		os.Exit(1)
	}
}

// RSS is the syncer's resident set size in MiB.
func (s *Syncer) RSS() (float64, error) {
	kib, err := rssKiB(s.Pid())
	return float64(kib) / 1024, err
}

// FileRSS is the part of the syncer's RSS (MiB) that maps files: the pages
// of its binary (code and read-only data) that it has run or read so far.
// It grows the first time a code path runs, not with what the syncer holds.
func (s *Syncer) FileRSS() (float64, error) {
	kib, err := statusKiB(s.Pid(), "RssFile")
	return float64(kib) / 1024, err
}
