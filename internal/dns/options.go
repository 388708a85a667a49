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

package dns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Component names the binary in user agents and logs.
const Component = "kubeocean-dns"

// DefaultListenAddress is above 1024, so that the server binds it without
// root or CAP_NET_BIND_SERVICE (the image runs as a non-root user), and is
// not mDNS's 5353, which avahi holds on many hosts. The DNS Service maps
// port 53 to it.
const DefaultListenAddress = "0.0.0.0:1053"

// Options are kubeocean-dns's own flags.
type Options struct {
	Namespace         string
	BindingUID        string
	ListenAddress     string
	ClusterDomain     string
	Upstreams         []string
	UpstreamTimeout   time.Duration
	KubernetesAddress string
	// ResolvConf is read for the upstreams when Upstreams is empty.
	ResolvConf string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		ListenAddress:   DefaultListenAddress,
		ClusterDomain:   "cluster.local",
		UpstreamTimeout: 2 * time.Second,
		ResolvConf:      "/etc/resolv.conf",
	}
}

// AddFlags registers the flags in fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"The binding's mount namespace in this (physical) cluster, which holds the mirror Services and their EndpointSlices. Required.")
	fs.StringVar(&o.BindingUID, "binding-uid", o.BindingUID,
		"UID of the ClusterBinding: only mirrors labelled kubeocean.io/binding-uid with it are answered. Required.")
	fs.StringVar(&o.ListenAddress, "listen-address", o.ListenAddress,
		"host:port to answer DNS on, over UDP and TCP. The default port needs no privilege; the DNS Service maps port 53 to it.")
	fs.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain,
		"The virtual cluster's domain. Names in it are answered from the mirrors and never forwarded.")
	fs.StringSliceVar(&o.Upstreams, "upstream", o.Upstreams,
		"Comma-separated host[:port] resolvers (port 53 by default) for names outside the cluster domain, tried in turn. Empty: the nameservers of /etc/resolv.conf.")
	fs.DurationVar(&o.UpstreamTimeout, "upstream-timeout", o.UpstreamTimeout,
		"How long to wait for one upstream before trying the next.")
	fs.StringVar(&o.KubernetesAddress, "kubernetes-address", o.KubernetesAddress,
		"IP address of the virtual API server as pods reach it, answered for kubernetes.default.svc.<domain>. Empty: that name does not exist.")
}

// Validate reports every wrong flag at once.
func (o *Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace is required"))
	} else if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--namespace %q: %s", o.Namespace, strings.Join(msgs, "; ")))
	}
	if o.BindingUID == "" {
		errs = append(errs, errors.New("--binding-uid is required"))
	} else if msgs := validation.IsValidLabelValue(o.BindingUID); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--binding-uid %q: %s", o.BindingUID, strings.Join(msgs, "; ")))
	}
	if _, _, err := net.SplitHostPort(o.ListenAddress); err != nil {
		errs = append(errs, fmt.Errorf("--listen-address: %w", err))
	}
	if msgs := validation.IsDNS1123Subdomain(strings.TrimSuffix(o.ClusterDomain, ".")); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-domain %q: %s", o.ClusterDomain, strings.Join(msgs, "; ")))
	}
	if _, err := upstreamAddresses(o.Upstreams); err != nil {
		errs = append(errs, fmt.Errorf("--upstream: %w", err))
	}
	if o.UpstreamTimeout <= 0 {
		errs = append(errs, errors.New("--upstream-timeout must be positive"))
	}
	if o.KubernetesAddress != "" {
		if _, err := netip.ParseAddr(o.KubernetesAddress); err != nil {
			errs = append(errs, fmt.Errorf("--kubernetes-address: %w", err))
		}
	}
	return errors.Join(errs...)
}

// upstreams returns the upstream resolvers: the flag's, else resolv.conf's.
func (o *Options) upstreams() ([]string, error) {
	if len(o.Upstreams) > 0 {
		return upstreamAddresses(o.Upstreams)
	}
	conf, err := dns.ClientConfigFromFile(o.ResolvConf)
	if err != nil {
		return nil, fmt.Errorf("no --upstream and no resolvers: %w", err)
	}
	var out []string
	for _, s := range conf.Servers {
		out = append(out, net.JoinHostPort(s, conf.Port))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no --upstream and %s lists no nameserver", o.ResolvConf)
	}
	return out, nil
}

// upstreamAddresses checks host[:port] entries and adds port 53 where none
// is given.
func upstreamAddresses(in []string) ([]string, error) {
	var out []string
	for _, s := range in {
		s = strings.TrimSpace(s)
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.Trim(s, "[]"), "53")
		}
		host, _, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%q is not host[:port]", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// kubernetesAddress is the parsed --kubernetes-address, invalid when empty.
func (o *Options) kubernetesAddress() netip.Addr {
	a, _ := netip.ParseAddr(o.KubernetesAddress)
	return a
}
