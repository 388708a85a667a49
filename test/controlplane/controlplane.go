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

// Package controlplane starts real Kubernetes control planes (etcd,
// kube-apiserver and, on request, kube-controller-manager, kube-scheduler and
// kwok) on loopback for integration and end-to-end tests. Any number of
// clusters can run side by side; each lives in its own temporary folder with
// its own ports, keys and admin token.
//
// Binaries come from the folder named by KUBEOCEAN_TESTBIN, or else from
// hack/testbin.sh, which builds them into a cache on first use (a cold build
// takes tens of minutes: run the script once before `go test`, or raise
// -timeout). A missing binary is an error, never a skip.
//
// Children are killed when the test process dies (Pdeathsig), and SIGINT or
// SIGTERM stops every running cluster in order before exiting; a TestMain
// that starts clusters outside of a test should call StopAll before it exits.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// EnvKeepTestDir keeps each cluster's folder (logs, etcd data, kubeconfig)
// after Stop when set to "1"; Stop prints where it is.
const EnvKeepTestDir = "KUBEOCEAN_KEEP_TESTDIR"

const (
	// startTimeout bounds one start attempt once binaries are there; two
	// apiservers starting at once under -race on two cores take ~20s.
	startTimeout = 2 * time.Minute
	// startAttempts covers a port being taken between picking and binding.
	startAttempts = 3
	// settleTime is how long a component must have run to count as started
	// when nothing better tells (see checkRunning).
	settleTime = 500 * time.Millisecond
)

// Options choose what runs in a cluster. etcd and kube-apiserver always run.
type Options struct {
	// Name labels the cluster in its folder name, kubeconfig context and
	// errors. Defaults to "cluster".
	Name string
	// ControllerManager runs kube-controller-manager with all default
	// controllers. Without it the apiserver runs with the ServiceAccount
	// admission plugin disabled, since nothing would create the "default"
	// ServiceAccount that every pod refers to.
	ControllerManager bool
	// Scheduler runs kube-scheduler; without it pods stay Pending unless
	// they set spec.nodeName.
	Scheduler bool
	// Kwok runs kwok managing all nodes: Nodes become Ready and pods bound
	// to them become Running, without kubelets.
	Kwok bool
	// ExtraAPIServerFlags are appended to the apiserver's flags; for a
	// single-valued flag the last occurrence wins.
	ExtraAPIServerFlags []string
	// VerifyKubeletServing makes the apiserver verify kubelet serving
	// certificates (--kubelet-certificate-authority) against the cluster
	// CA, which the controller-manager signs kubelet-serving requests with.
	VerifyKubeletServing bool
	// ExtraControllerManagerFlags are appended to kube-controller-manager's
	// flags, e.g. a shorter --node-monitor-grace-period.
	ExtraControllerManagerFlags []string
	// KwokArgs are appended to kwok's flags, e.g. --node-port and -c
	// files of its Logs, Exec and PortForward configuration, so that kwok
	// serves a kubelet API for its nodes.
	KwokArgs []string
	// AuditPolicy, when set, is an audit.k8s.io Policy: the apiserver logs
	// the requests it selects to Cluster.AuditLogPath, one JSON event per
	// line, before it answers them.
	AuditPolicy []byte
}

// Cluster is a running control plane. Stop it when done (StartT does).
type Cluster struct {
	// Name is Options.Name, also the kubeconfig context name.
	Name string
	// Dir is the temporary folder holding everything of this cluster,
	// including one <component>.log per process.
	Dir string
	// URL is the apiserver's address, https://127.0.0.1:<port>.
	URL string
	// KubeconfigPath is an admin kubeconfig file, Kubeconfig its content.
	KubeconfigPath string
	Kubeconfig     []byte
	// AuditLogPath is the audit log when Options.AuditPolicy is set.
	AuditLogPath string

	opts    Options
	bins    binaries
	creds   credentialFiles
	certs   clientCertFiles
	etcdURL string
	caData  []byte // nil when clients skip TLS verification
	caFile  string

	mu       sync.Mutex
	procs    []*process // in start order
	resumers []func()   // of paused components
	stopping bool
	stopOnce sync.Once
}

// Start starts a cluster and returns once the apiserver is ready, the default
// namespace exists and, with a controller-manager, the default ServiceAccount
// exists. On error everything started is stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Name == "" {
		opts.Name = "cluster"
	}
	bins, err := resolveBinaries(opts)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		c, err := startOnce(ctx, opts, bins)
		if err == nil {
			return c, nil
		}
		if attempt == startAttempts || !errors.Is(err, errPortInUse) || ctx.Err() != nil {
			return nil, fmt.Errorf("starting cluster %s: %w", opts.Name, err)
		}
	}
}

func startOnce(ctx context.Context, opts Options, bins binaries) (_ *Cluster, err error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	dir, err := makeClusterDir(opts.Name)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Name: opts.Name, Dir: dir, opts: opts, bins: bins}
	register(c)
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	if c.creds, err = writeCredentials(dir); err != nil {
		return nil, err
	}
	if c.certs, err = writeClientCerts(dir); err != nil {
		return nil, err
	}
	if err := c.writeAuditPolicy(); err != nil {
		return nil, err
	}
	if err := c.startEtcd(ctx, ports[0], ports[1]); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, ports[2]); err != nil {
		return nil, err
	}
	// The rest only talk to the apiserver, so they start together.
	var controllerManager *process
	if opts.ControllerManager {
		if controllerManager, err = c.startControllerManager(); err != nil {
			return nil, err
		}
	}
	if opts.Scheduler {
		if err := c.startScheduler(); err != nil {
			return nil, err
		}
	}
	if opts.Kwok {
		if err := c.startKwok(); err != nil {
			return nil, err
		}
	}
	if controllerManager != nil {
		if err := c.waitForDefaultServiceAccount(ctx, controllerManager); err != nil {
			return nil, err
		}
	}
	if err := c.checkRunning(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// checkRunning catches a component that dies right away, such as one
// rejecting a flag: the scheduler and kwok have no readiness to wait for, so
// they get a moment to fail before Start reports success.
func (c *Cluster) checkRunning(ctx context.Context) error {
	c.mu.Lock()
	procs := append([]*process(nil), c.procs...)
	c.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(p.started.Add(settleTime))):
		case <-ctx.Done():
			return ctx.Err()
		}
		if p.exited() {
			return p.exitError()
		}
	}
	return nil
}

func (c *Cluster) writeAdminKubeconfig() error {
	data, err := kubeconfig(c.Name, c.URL, c.caData, AdminUser, c.creds.adminToken)
	if err != nil {
		return err
	}
	path := filepath.Join(c.Dir, "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return err
	}
	c.Kubeconfig, c.KubeconfigPath = data, path
	return nil
}

// Config returns a fresh admin client config (user AdminUser, in
// system:masters), rate-limited at 100 QPS with bursts of 200.
func (c *Cluster) Config() *rest.Config {
	return restConfig(c.URL, c.caData, c.creds.adminToken)
}

// Clientset returns a new admin clientset.
func (c *Cluster) Clientset() kubernetes.Interface {
	// Only a malformed config fails here, and Config is always well formed.
	return kubernetes.NewForConfigOrDie(c.Config())
}

// ConfigForToken returns a client config authenticating with token, for
// example a ServiceAccount token, to test what that identity may do.
func (c *Cluster) ConfigForToken(token string) *rest.Config {
	return restConfig(c.URL, c.caData, token)
}

// KubeconfigForToken renders a kubeconfig authenticating with token, for
// processes under test or for a Secret a ClusterBinding refers to.
func (c *Cluster) KubeconfigForToken(token string) []byte {
	data, err := kubeconfig(c.Name, c.URL, c.caData, "token-user", token)
	if err != nil {
		// Serialising a config built in memory has no failure mode in practice.
		panic(fmt.Sprintf("controlplane: rendering kubeconfig: %v", err))
	}
	return data
}

// LogTails returns the last n lines of each component's log, for failure
// reports of tests that did not start the cluster through StartT.
func (c *Cluster) LogTails(n int) string {
	c.mu.Lock()
	procs := append([]*process(nil), c.procs...)
	c.mu.Unlock()
	var b strings.Builder
	for _, p := range procs {
		fmt.Fprintf(&b, "===== %s: last %d lines of %s =====\n%s\n", c.Name, n, p.logPath, p.tail(n))
	}
	return b.String()
}

// Stop stops the components in reverse start order (kwok, scheduler,
// controller-manager, apiserver, etcd: an apiserver whose etcd is gone hangs
// on shutdown), each with SIGTERM and, after a few seconds, SIGKILL; then it
// removes the folder unless KUBEOCEAN_KEEP_TESTDIR=1. It is idempotent and
// safe to call concurrently; every call returns once the cluster is stopped.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopping = true
		procs, resumers := c.procs, c.resumers
		c.mu.Unlock()
		for _, resume := range resumers {
			resume() // a stopped process takes no SIGTERM
		}
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
		unregister(c)
		if os.Getenv(EnvKeepTestDir) == "1" {
			keepClusterDir(c.Dir)
			fmt.Fprintf(os.Stderr, "controlplane: kept folder of cluster %s: %s\n", c.Name, c.Dir)
			return
		}
		if err := os.RemoveAll(c.Dir); err != nil {
			fmt.Fprintf(os.Stderr, "controlplane: removing folder of cluster %s: %v\n", c.Name, err)
		}
	})
}
