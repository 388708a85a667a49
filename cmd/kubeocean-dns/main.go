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
