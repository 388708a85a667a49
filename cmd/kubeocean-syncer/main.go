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
