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

// Command kubeocean-dns answers the DNS names of a virtual cluster's
// Services for the pods of one ClusterBinding, from the mirror Services
// its syncer keeps in the binding's mount namespace of the physical
// cluster, and forwards every other name upstream.
package main

import (
	"os"
	"slices"

	cliflag "k8s.io/component-base/cli/flag"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/dns"
)

func main() {
	opts := app.NewOptions(dns.Component)
	dnsOpts := dns.NewOptions()
	cmd := app.Command{
		Options: opts,
		Short:   "The DNS server of one ClusterBinding: the virtual cluster's Service names, from the binding's mirror Services.",
		AddFlags: func(fss *cliflag.NamedFlagSets) {
			// Every replica answers: there is no leader to elect.
			delete(fss.FlagSets, app.SectionElection)
			fss.Order = slices.DeleteFunc(fss.Order, func(s string) bool { return s == app.SectionElection })
			dnsOpts.AddFlags(fss.FlagSet("DNS"))
		},
		Validate: dnsOpts.Validate,
		Setup:    func() app.Setup { return dns.Setup(dnsOpts) },
	}
	os.Exit(cmd.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
