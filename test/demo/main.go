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

// Command demo shows Kubeocean end to end on this machine: it starts a
// virtual and a physical control plane on loopback, deploys Kubeocean from
// the shipped manifests with kubectl, binds the physical cluster, runs a
// sample application on virtual nodes, prints what runs where, what
// kubectl logs and exec show of one of its pods and what the binding's
// kubeocean-dns answers for the application's Service, and keeps
// everything running until interrupted (or exits after the check with
// --exit-after-check). It is what `make demo` runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

type options struct {
	manager        string
	dns            string
	exitAfterCheck bool
	timeout        time.Duration
}

func main() {
	var opts options
	flag.StringVar(&opts.manager, "manager", "bin/kubeocean-manager", "Path of the kubeocean-manager binary.")
	flag.StringVar(&opts.dns, "dns", "", "Path of the kubeocean-dns binary (default: beside --manager).")
	flag.BoolVar(&opts.exitAfterCheck, "exit-after-check", false, "Stop and clean up once the application runs, instead of waiting for Ctrl-C (for CI).")
	flag.DurationVar(&opts.timeout, "timeout", 5*time.Minute, "How long each waiting step may take.")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The demo stops its clusters itself, Kubeocean first, on a signal.
	controlplane.LeaveSignalsToCaller()
	os.Exit(run(ctx, opts))
}

// demo is one run: the stack once started, and what the steps produced.
type demo struct {
	opts    options
	stack   *stack.Stack
	kwok    *kwokkubelet.Server
	kwokDir string
	manager *stack.Binary
	// dns is the binding's kubeocean-dns, and mirrorIP what it answers
	// for the sample Service.
	dns      *stack.DNS
	mirrorIP string
	step     int
}

// steps is the number of steps run, for the progress counter.
const steps = 8

func run(ctx context.Context, opts options) int {
	manager, err := filepath.Abs(opts.manager)
	if err == nil {
		_, err = os.Stat(manager)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubeocean-manager binary: %v (run `make build`, or use `make demo`)\n", err)
		return 1
	}
	opts.manager = manager
	d := &demo{opts: opts}
	start := time.Now()
	if err := d.setUp(ctx); err != nil {
		d.fail(err)
		return 1
	}
	fmt.Printf("\nKubeocean demo is up (%s).\n\n", time.Since(start).Round(time.Second))
	if err := d.stack.WriteSummary(ctx, os.Stdout); err != nil {
		d.fail(fmt.Errorf("printing the summary: %w", err))
		return 1
	}
	if err := d.showKubeletAPI(ctx); err != nil {
		d.fail(fmt.Errorf("kubectl logs and exec through the virtual cluster: %w", err))
		return 1
	}
	if err := d.showNodeUsage(ctx); err != nil {
		d.fail(fmt.Errorf("node usage through the virtual cluster: %w", err))
		return 1
	}
	if err := d.showDNS(ctx); err != nil {
		d.fail(fmt.Errorf("names through kubeocean-dns: %w", err))
		return 1
	}
	d.printExplore()
	if !opts.exitAfterCheck {
		fmt.Println("\nRunning until interrupted (Ctrl-C).")
		<-ctx.Done()
	}
	fmt.Println("\nStopping the manager and both clusters...")
	d.stack.Stop()
	d.stopKwokServer()
	fmt.Println("Stopped; nothing left behind.")
	return 0
}

// setUp runs the steps one after the other, printing progress.
func (d *demo) setUp(ctx context.Context) error {
	if err := d.do(ctx, "Start the virtual cluster (apiserver, controller-manager, scheduler) and the physical cluster (apiserver, controller-manager, kwok)", func(ctx context.Context) error {
		// kwok serves the physical nodes' kubelet API (logs from a file,
		// exec as local commands), which Kubeocean's kubelet API of the
		// virtual nodes reaches through the physical apiserver.
		var err error
		if d.kwokDir, err = os.MkdirTemp("", "kubeocean-demo-kwok-"); err != nil {
			return err
		}
		if d.kwok, err = kwokkubelet.New(d.kwokDir, metricsNode); err != nil {
			return err
		}
		d.stack, err = stack.Start(ctx, stack.Options{KwokArgs: d.kwok.Args})
		return err
	}); err != nil {
		return err
	}
	s := d.stack
	if err := d.do(ctx, "kubectl apply the CRDs (manifests/crds) to both clusters", s.InstallCRDs); err != nil {
		return err
	}
	if err := d.do(ctx, "kubectl apply the RBAC: manifests/rbac/in-process (virtual), manifests/rbac/physical and the node stats opt-in manifests/rbac/physical-node-stats (physical); and the admission policy: manifests/admission (virtual)", func(ctx context.Context) error {
		if err := s.InstallRBAC(ctx, "in-process"); err != nil {
			return err
		}
		// Node stats (kubectl top, the virtual nodes' resource metrics)
		// are the physical administrator's opt-in; the demo opts in.
		if _, err := s.Physical.Kubectl(ctx, "apply", "-k", testenv.RepoPath("manifests/rbac/physical-node-stats")); err != nil {
			return err
		}
		return s.InstallAdmission(ctx)
	}); err != nil {
		return err
	}
	if err := d.do(ctx, "Create 4 kwok nodes in the physical cluster, 3 of them labelled "+stack.LendableLabel+"=true", func(ctx context.Context) error {
		if err := s.CreateNodes(ctx, []string{"worker-a", "worker-b", "worker-c"}, map[string]string{stack.LendableLabel: "true"}); err != nil {
			return err
		}
		return s.CreateNodes(ctx, []string{"worker-private"}, nil)
	}); err != nil {
		return err
	}
	if err := d.do(ctx, "Start kubeocean-manager --syncer-mode=in-process as ServiceAccount "+stack.SystemNamespace+"/"+stack.ManagerAccount, d.startManager); err != nil {
		return err
	}
	if err := d.do(ctx, "Bind the physical cluster (kubeconfig Secret, samples/clusterbinding.yaml, samples/resourceleasingpolicy.yaml) and wait for 3 Ready virtual nodes", func(ctx context.Context) error {
		kubeconfig, err := s.PhysicalSyncerKubeconfig(ctx)
		if err != nil {
			return err
		}
		if err := s.Bind(ctx, kubeconfig); err != nil {
			return err
		}
		if err := s.WaitBindingCondition(ctx, "Ready", metav1.ConditionTrue); err != nil {
			return err
		}
		return s.WaitVirtualNodesReady(ctx, 3)
	}); err != nil {
		return err
	}
	if err := d.do(ctx, "Deploy samples/app.yaml (Deployment and Service web) and wait until its pods run on virtual nodes and in the physical cluster", func(ctx context.Context) error {
		if err := s.DeployApp(ctx); err != nil {
			return err
		}
		return s.WaitAppRunning(ctx)
	}); err != nil {
		return err
	}
	return d.do(ctx, "Run the binding's kubeocean-dns on loopback (arguments and ServiceAccount of its Deployment "+stack.MountNamespace+"/kubeocean-dns) until it answers "+webName, d.startDNS)
}

func (d *demo) startManager(ctx context.Context) error {
	kubeconfig, err := d.stack.VirtualKubeconfig(ctx, stack.SystemNamespace, stack.ManagerAccount)
	if err != nil {
		return err
	}
	// --kubelet-address: what the shipped manager Deployment passes as its
	// pod IP; the virtual apiserver reaches the virtual nodes' kubelet API
	// there.
	d.manager, err = d.stack.StartBinary("kubeocean-manager", d.opts.manager, kubeconfig,
		"--syncer-mode=in-process", "--leader-elect", "--leader-elect-resource-namespace="+stack.SystemNamespace,
		"--kubelet-address="+kwokkubelet.Address(), "--kubelet-port-range="+kubeletPortRange())
	if err != nil {
		return err
	}
	// A bad flag or credential shows within a moment.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Second):
	}
	if exited, err := d.manager.Exited(); exited {
		return fmt.Errorf("kubeocean-manager exited: %v", err)
	}
	return nil
}

// do runs one step with the step timeout and prints its outcome.
func (d *demo) do(ctx context.Context, what string, step func(context.Context) error) error {
	d.step++
	fmt.Printf("[%d/%d] %s ...\n", d.step, steps, what)
	ctx, cancel := context.WithTimeout(ctx, d.opts.timeout)
	defer cancel()
	start := time.Now()
	if err := step(ctx); err != nil {
		return fmt.Errorf("step %d (%s): %w", d.step, what, err)
	}
	fmt.Printf("      done in %s\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// fail reports a failed step, keeps the clusters' folders (logs,
// kubeconfigs) for a post-mortem, and stops every process.
func (d *demo) fail(err error) {
	fmt.Fprintf(os.Stderr, "\nFAILED: %v\n", err)
	defer d.stopKwokServer()
	if d.stack == nil {
		return
	}
	if d.manager != nil {
		fmt.Fprintf(os.Stderr, "\nLast lines of %s:\n%s\n", d.manager.LogPath(), d.manager.Tail(30))
	}
	if d.dns != nil {
		fmt.Fprintf(os.Stderr, "\nLast lines of %s:\n%s\n", d.dns.LogPath(), d.dns.Tail(20))
	}
	if !errors.Is(err, context.Canceled) {
		os.Setenv(controlplane.EnvKeepTestDir, "1")
		fmt.Fprintf(os.Stderr, "\nLogs of every component (kept): %s and %s\n", d.stack.Virtual.Dir, d.stack.Physical.Dir)
	}
	d.stack.Stop()
}

// stopKwokServer stops the echo server behind kwok's kubelet API and
// removes its files.
func (d *demo) stopKwokServer() {
	if d.kwok != nil {
		d.kwok.Close()
	}
	if d.kwokDir != "" {
		_ = os.RemoveAll(d.kwokDir)
	}
}

func (d *demo) printExplore() {
	kubectl, err := controlplane.KubectlPath()
	if err != nil {
		kubectl = "kubectl"
	}
	s := d.stack
	fmt.Printf(`
Explore with kubectl (admin kubeconfigs):
  virtual:  %[1]s --kubeconfig=%[2]s get clusterbindings,nodes
            %[1]s --kubeconfig=%[2]s -n %[4]s get pods -o wide
  physical: %[1]s --kubeconfig=%[3]s -n %[5]s get pods,configmaps,secrets -o wide
            %[1]s --kubeconfig=%[3]s get resourceleasingpolicies,nodes
Manager:  log %[6]s
          metrics http://%[7]s/metrics
DNS:      kubeocean-dns of the binding answers on %[10]s (UDP and TCP), log %[11]s
Component logs: %[8]s, %[9]s
`, kubectl, s.Virtual.KubeconfigPath, s.Physical.KubeconfigPath, stack.AppNamespace, stack.MountNamespace,
		d.manager.LogPath(), d.manager.MetricsAddress, s.Virtual.Dir, s.Physical.Dir, d.dns.Address, d.dns.LogPath())
}

// showKubeletAPI prints what kubectl logs and kubectl exec show of a pod of
// the application, through the virtual apiserver and the kubelet API of
// its virtual node.
func (d *demo) showKubeletAPI(ctx context.Context) error {
	s := d.stack
	pods, err := s.VirtualKube.CoreV1().Pods(stack.AppNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + stack.AppName})
	if err != nil {
		return err
	}
	if len(pods.Items) == 0 {
		return errors.New("the application has no pods")
	}
	pod := pods.Items[0].Name
	fmt.Println("\nkubectl logs and exec through the virtual cluster: the virtual apiserver calls the kubelet API of the")
	fmt.Println("virtual node, which Kubeocean serves from the physical pod (kwok stands in for the physical kubelet:")
	fmt.Println("it serves every container's log from a file and runs exec commands on this machine):")
	for _, args := range [][]string{
		{"-n", stack.AppNamespace, "logs", pod, "--tail=2"},
		{"-n", stack.AppNamespace, "exec", pod, "--", "echo", "hello through the virtual cluster"},
	} {
		out, err := s.Virtual.Kubectl(ctx, args...)
		if err != nil {
			return err
		}
		fmt.Printf("$ kubectl %s\n%s", strings.Join(quoteArgs(args), " "), out)
	}
	return nil
}

// quoteArgs quotes the arguments a shell would split.
func quoteArgs(args []string) []string {
	quoted := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " $()") {
			a = "'" + a + "'"
		}
		quoted[i] = a
	}
	return quoted
}

// kubeletPortRange is a free range of ports for the kubelet API, so that
// the demo runs beside a kubelet or another demo (the default is
// 10250-11249).
func kubeletPortRange() string {
	first, err := kwokkubelet.FreePortRange(10)
	if err != nil {
		return "10250-11249"
	}
	return fmt.Sprintf("%d-%d", first, first+9)
}
