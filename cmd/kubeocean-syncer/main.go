// Command kubeocean-syncer runs the syncer of one ClusterBinding: it keeps
// virtual nodes for the physical nodes the binding lends, creates the pods
// placed on them in the physical cluster and copies their status back.
package main

import (
	"os"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/syncer"
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
	cmd := app.Command{
		Options:  opts,
		Short:    "The syncer of one ClusterBinding: virtual nodes from physical ones, physical pods from virtual ones.",
		AddFlags: func(fss *cliflag.NamedFlagSets) { syncerOpts.AddFlags(fss) },
		Validate: syncerOpts.Validate,
		Setup: func() app.Setup {
			if opts.Election.LeaseName == "" {
				opts.Election.LeaseName = syncer.Component + "-" + syncerOpts.BindingName
			}
			return syncer.Setup(syncerOpts)
		},
	}
	os.Exit(cmd.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
