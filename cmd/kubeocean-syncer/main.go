// Command kubeocean-syncer runs the syncer of one ClusterBinding: it keeps
// virtual nodes for the physical nodes the binding lends and copies the
// status of the pods it runs there back to the virtual cluster.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/pkg/app"
	"github.com/kubeocean/kubeocean/pkg/syncer"
)

func main() {
	opts := app.NewOptions(syncer.Component)
	// Lease renewals alone are one write per virtual node every 10 s; leave
	// room for them and for pod traffic at a thousand nodes.
	opts.KubeAPIQPS, opts.KubeAPIBurst = 300, 600
	syncerOpts := syncer.Options{Workers: 4, PodWorkers: 128, NodeWorkers: 32, PhysicalQPS: 300, PhysicalBurst: 600, Kubelet: syncer.NewKubeletOptions()}
	// Empty means one Lease per binding (below), so replicas of different
	// syncers never compete.
	opts.Election.LeaseName = ""
	fs := flag.CommandLine
	klog.InitFlags(fs)
	opts.AddFlags(fs)
	fs.StringVar(&syncerOpts.BindingName, "cluster-binding", "", "Name of the ClusterBinding this syncer serves (required).")
	fs.IntVar(&syncerOpts.Workers, "workers", syncerOpts.Workers, "Concurrent reconciles per controller.")
	fs.IntVar(&syncerOpts.PodWorkers, "pod-workers", syncerOpts.PodWorkers, "Concurrent reconciles of the virtual pod controller.")
	fs.IntVar(&syncerOpts.NodeWorkers, "node-workers", syncerOpts.NodeWorkers, "Concurrent reconciles of the virtual node and node Lease controllers.")
	fs.StringVar(&syncerOpts.VirtualAPIServer, "virtual-apiserver-address", "",
		"host:port at which pods in the physical cluster reach the virtual API server; sets their KUBERNETES_SERVICE_HOST/PORT.")
	fs.Func("physical-kube-api-qps", "Queries per second to the physical cluster's API server (default 300).", func(s string) error {
		_, err := fmt.Sscan(s, &syncerOpts.PhysicalQPS)
		return err
	})
	fs.IntVar(&syncerOpts.PhysicalBurst, "physical-kube-api-burst", syncerOpts.PhysicalBurst, "Burst of queries to the physical cluster's API server.")
	syncerOpts.Kubelet.AddFlags(fs)
	fs.DurationVar(&syncerOpts.DrainTimeout, "drain-timeout", syncer.DefaultDrainTimeout, "How long a drained virtual node's pods are asked to leave through the eviction API (PodDisruptionBudgets may refuse) before they are deleted.")
	fs.BoolVar(&syncerOpts.SyncDaemonSetPods, "sync-daemonset-pods", false, "Run the pods of DaemonSets placed on virtual nodes in the physical cluster (off: they stay Pending with a condition saying why).")
	flag.Parse()
	if syncerOpts.BindingName == "" {
		fmt.Fprintln(os.Stderr, "--cluster-binding is required")
		os.Exit(2)
	}
	if err := syncerOpts.Kubelet.Complete(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if opts.Election.LeaseName == "" {
		opts.Election.LeaseName = syncer.Component + "-" + syncerOpts.BindingName
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	if err := app.Run(ctx, opts, syncer.Setup(syncerOpts)); err != nil {
		klog.Background().Error(err, "Syncer stopped")
		klog.Flush()
		os.Exit(1)
	}
	klog.Flush()
}
