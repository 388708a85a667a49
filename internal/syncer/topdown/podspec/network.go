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

package podspec

import (
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// The kubelet's limits on a pod's resolver configuration
// (k8s.io/kubernetes/pkg/apis/core/validation): what a merged dnsConfig is
// cut to, so that the physical apiserver accepts it.
const (
	maxDNSNameservers = 3
	maxDNSSearchPaths = 32
	maxDNSSearchChars = 2048
	dnsNdots          = "5"
)

// Network is what the pods' names and service links are made from: the
// binding's DNS server and the mirrors of the virtual Services
// (docs/networking.md). *service.Network.
type Network interface {
	// DNSServer is the ClusterIP of the binding's DNS Service; "" while it
	// has none, and pods keep the physical cluster's DNS.
	DNSServer() string
	// ClusterDomain is the virtual cluster's DNS domain.
	ClusterDomain() string
	// ServiceLinks are the mirrors of the Services of a virtual namespace
	// that have a ClusterIP, under their virtual names.
	ServiceLinks(namespace string) []ServiceLink
}

// ServiceLink is one Service as the kubelet's service environment variables
// describe it.
type ServiceLink struct {
	// Name is the virtual Service's name; ClusterIP the mirror's.
	Name, ClusterIP string
	Ports           []corev1.ServicePort
}

// NetworkView is what one pod's translation reads of the Network.
type NetworkView struct {
	dnsServer, domain string
	links             []ServiceLink
}

// NetworkFor is what the translation of virtual reads of n; nil for a nil
// n.
func NetworkFor(n Network, virtual *corev1.Pod) *NetworkView {
	if n == nil {
		return nil
	}
	v := &NetworkView{dnsServer: n.DNSServer(), domain: n.ClusterDomain()}
	if virtual.Spec.EnableServiceLinks == nil || *virtual.Spec.EnableServiceLinks {
		v.links = n.ServiceLinks(virtual.Namespace)
	}
	return v
}

// applyNetwork gives the physical pod the virtual cluster's names: its
// subdomain names the mirror of the virtual Service, so that the physical
// EndpointSlice controller gives it its per-pod name; its resolver is the
// binding's DNS server, as ClusterFirst would make the virtual cluster's;
// its environment has the service variables the virtual kubelet would set.
func (n *NetworkView) applyNetwork(spec *corev1.PodSpec, virtual *corev1.Pod) {
	if spec.Subdomain != "" {
		spec.Subdomain = kubeoceanv1alpha1.PhysicalName(virtual.Namespace, spec.Subdomain)
	}
	if n == nil {
		return
	}
	if n.dnsServer != "" && clusterFirst(spec) {
		spec.DNSConfig = mergeDNSConfig(n.dnsServer, virtual.Namespace, n.domain, spec.DNSConfig)
		spec.DNSPolicy = corev1.DNSNone
	}
	if env := serviceEnv(n.links); len(env) > 0 {
		for _, c := range containersOf(spec) {
			c.Env = withServiceEnv(c.Env, env)
		}
	}
}

// clusterFirst tells a pod whose resolver the kubelet would point at the
// cluster's DNS: ClusterFirst (the default) but on the host's network,
// where it means Default, and ClusterFirstWithHostNet.
func clusterFirst(spec *corev1.PodSpec) bool {
	switch spec.DNSPolicy {
	case "", corev1.DNSClusterFirst:
		return !spec.HostNetwork
	case corev1.DNSClusterFirstWithHostNet:
		return true
	}
	return false
}

// mergeDNSConfig is the resolver of a ClusterFirst pod with the user's own
// dnsConfig merged as the kubelet merges it: the cluster's nameserver and
// search path first, the user's after, duplicates dropped, cut to the
// kubelet's limits; options by name, the user's winning.
func mergeDNSConfig(server, namespace, domain string, user *corev1.PodDNSConfig) *corev1.PodDNSConfig {
	out := &corev1.PodDNSConfig{
		Nameservers: []string{server},
		Searches:    []string{namespace + ".svc." + domain, "svc." + domain, domain},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo(dnsNdots)}},
	}
	if user == nil {
		return out
	}
	out.Nameservers = appendUnique(out.Nameservers, user.Nameservers, maxDNSNameservers)
	out.Searches = appendUnique(out.Searches, user.Searches, maxDNSSearchPaths)
	for chars(out.Searches) > maxDNSSearchChars {
		out.Searches = out.Searches[:len(out.Searches)-1]
	}
	for _, o := range user.Options {
		o := *o.DeepCopy()
		if i := slices.IndexFunc(out.Options, func(have corev1.PodDNSConfigOption) bool { return have.Name == o.Name }); i >= 0 {
			out.Options[i] = o
			continue
		}
		out.Options = append(out.Options, o)
	}
	return out
}

func appendUnique(have, more []string, limit int) []string {
	for _, s := range more {
		if len(have) >= limit {
			break
		}
		if s != "" && !slices.Contains(have, s) {
			have = append(have, s)
		}
	}
	return have
}

// chars is the length of a search path as resolv.conf writes it.
func chars(searches []string) int {
	return len(strings.Join(searches, " "))
}

func ptrTo(s string) *string { return &s }

// serviceEnv are the variables the kubelet sets for links (docker-link
// style), sorted by Service name so that the pod is the same every time.
func serviceEnv(links []ServiceLink) []corev1.EnvVar {
	links = slices.Clone(links)
	slices.SortFunc(links, func(a, b ServiceLink) int { return strings.Compare(a.Name, b.Name) })
	var env []corev1.EnvVar
	for _, l := range links {
		if l.ClusterIP == "" || l.ClusterIP == corev1.ClusterIPNone || len(l.Ports) == 0 {
			continue
		}
		prefix := strings.ToUpper(strings.ReplaceAll(l.Name, "-", "_"))
		env = append(env,
			corev1.EnvVar{Name: prefix + "_SERVICE_HOST", Value: l.ClusterIP},
			corev1.EnvVar{Name: prefix + "_SERVICE_PORT", Value: strconv.Itoa(int(l.Ports[0].Port))})
		for _, p := range l.Ports {
			if p.Name != "" {
				name := strings.ToUpper(strings.ReplaceAll(p.Name, "-", "_"))
				env = append(env, corev1.EnvVar{Name: prefix + "_SERVICE_PORT_" + name, Value: strconv.Itoa(int(p.Port))})
			}
		}
		for i, p := range l.Ports {
			protocol := strings.ToLower(string(p.Protocol))
			port := strconv.Itoa(int(p.Port))
			url := protocol + "://" + net.JoinHostPort(l.ClusterIP, port)
			if i == 0 {
				env = append(env, corev1.EnvVar{Name: prefix + "_PORT", Value: url})
			}
			portPrefix := prefix + "_PORT_" + port + "_" + strings.ToUpper(protocol)
			env = append(env,
				corev1.EnvVar{Name: portPrefix, Value: url},
				corev1.EnvVar{Name: portPrefix + "_PROTO", Value: protocol},
				corev1.EnvVar{Name: portPrefix + "_PORT", Value: port},
				corev1.EnvVar{Name: portPrefix + "_ADDR", Value: l.ClusterIP})
		}
	}
	return env
}

// withServiceEnv puts the service variables before the container's own,
// as the kubelet makes them: the container's own of the same name win, and
// its own may refer to them as $(VAR).
func withServiceEnv(own, service []corev1.EnvVar) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(service)+len(own))
	for _, e := range service {
		if !hasEnv(own, e.Name) {
			out = append(out, e)
		}
	}
	return append(out, own...)
}

// containersOf are the containers the kubelet sets service variables in:
// init and regular ones (ephemeral containers are added later).
func containersOf(spec *corev1.PodSpec) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(spec.InitContainers)+len(spec.Containers))
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}
