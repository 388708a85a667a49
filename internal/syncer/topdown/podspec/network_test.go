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
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestMergeDNSConfigWithinKubeletLimits(t *testing.T) {
	plain := mergeDNSConfig("10.0.0.10", "shop", "cluster.local", nil)
	if !slices.Equal(plain.Nameservers, []string{"10.0.0.10"}) ||
		!slices.Equal(plain.Searches, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local"}) ||
		len(plain.Options) != 1 || plain.Options[0].Name != "ndots" || *plain.Options[0].Value != "5" {
		t.Errorf("ClusterFirst resolver %+v", plain)
	}
	var searches []string
	for i := range 40 {
		searches = append(searches, fmt.Sprintf("s%d.example", i))
	}
	user := &corev1.PodDNSConfig{
		Nameservers: []string{"1.1.1.1", "10.0.0.10", "8.8.8.8", "9.9.9.9"},
		Searches:    append([]string{"svc.cluster.local"}, searches...),
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
	}
	merged := mergeDNSConfig("10.0.0.10", "shop", "cluster.local", user)
	if !slices.Equal(merged.Nameservers, []string{"10.0.0.10", "1.1.1.1", "8.8.8.8"}) {
		t.Errorf("nameservers %v: the binding's first, duplicates dropped, at most 3", merged.Nameservers)
	}
	if len(merged.Searches) != maxDNSSearchPaths || merged.Searches[0] != "shop.svc.cluster.local" || merged.Searches[3] != "s0.example" {
		t.Errorf("searches %v: the cluster's first, duplicates dropped, at most 32", merged.Searches)
	}
	if len(merged.Options) != 2 || *merged.Options[0].Value != "2" || merged.Options[1].Name != "edns0" {
		t.Errorf("options %+v: the user's win by name", merged.Options)
	}
	long := &corev1.PodDNSConfig{Searches: []string{strings.Repeat("a", 250) + ".x", strings.Repeat("b", 250) + ".x"}}
	for i := range 10 {
		long.Searches = append(long.Searches, fmt.Sprintf("%s%d.x", strings.Repeat("c", 240), i))
	}
	if got := mergeDNSConfig("10.0.0.10", "shop", "cluster.local", long); chars(got.Searches) > maxDNSSearchChars {
		t.Errorf("search path of %d characters", chars(got.Searches))
	}
}

func TestApplyNetworkPolicies(t *testing.T) {
	view := &NetworkView{dnsServer: "10.0.0.10", domain: "cluster.local"}
	for _, c := range []struct {
		policy      corev1.DNSPolicy
		hostNetwork bool
		rewritten   bool
	}{
		{"", false, true}, {corev1.DNSClusterFirst, false, true}, {corev1.DNSClusterFirstWithHostNet, true, true},
		{corev1.DNSClusterFirst, true, false}, {corev1.DNSDefault, false, false}, {corev1.DNSNone, false, false},
	} {
		spec := &corev1.PodSpec{DNSPolicy: c.policy, HostNetwork: c.hostNetwork}
		view.applyNetwork(spec, &corev1.Pod{})
		if got := spec.DNSPolicy == corev1.DNSNone && spec.DNSConfig != nil && spec.DNSConfig.Nameservers[0] == "10.0.0.10"; got != c.rewritten {
			t.Errorf("dnsPolicy %q hostNetwork %v: rewritten %v, want %v (%+v)", c.policy, c.hostNetwork, got, c.rewritten, spec)
		}
	}
	// No DNS Service yet: the physical cluster's DNS, as it was.
	spec := &corev1.PodSpec{}
	(&NetworkView{domain: "cluster.local"}).applyNetwork(spec, &corev1.Pod{})
	if spec.DNSPolicy != "" || spec.DNSConfig != nil {
		t.Errorf("without a DNS server: %+v", spec)
	}
}

func TestApplyNetworkSubdomainAndServiceLinks(t *testing.T) {
	virtual := &corev1.Pod{}
	virtual.Namespace = "shop"
	spec := &corev1.PodSpec{
		Hostname: "db-0", Subdomain: "db",
		InitContainers: []corev1.Container{{Name: "init"}},
		Containers:     []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "WEB_SERVICE_HOST", Value: "mine"}, {Name: "URL", Value: "$(WEB_PORT)"}}}},
	}
	view := &NetworkView{dnsServer: "10.0.0.10", domain: "cluster.local", links: []ServiceLink{
		{Name: "web-api", ClusterIP: "10.0.0.20", Ports: []corev1.ServicePort{{Name: "http-alt", Port: 80, Protocol: corev1.ProtocolTCP}, {Port: 53, Protocol: corev1.ProtocolUDP}}},
		{Name: "headless", ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 1}}},
		{Name: "web", ClusterIP: "fd00::1", Ports: []corev1.ServicePort{{Port: 8080, Protocol: corev1.ProtocolTCP}}},
	}}
	view.applyNetwork(spec, virtual)
	if spec.Subdomain != kubeoceanv1alpha1.PhysicalName("shop", "db") || spec.Hostname != "db-0" {
		t.Errorf("subdomain %q hostname %q: want the mirror's name and the virtual hostname", spec.Subdomain, spec.Hostname)
	}
	env := map[string]string{}
	for _, e := range spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	want := map[string]string{
		"WEB_API_SERVICE_HOST": "10.0.0.20", "WEB_API_SERVICE_PORT": "80", "WEB_API_SERVICE_PORT_HTTP_ALT": "80",
		"WEB_API_PORT": "tcp://10.0.0.20:80", "WEB_API_PORT_80_TCP": "tcp://10.0.0.20:80", "WEB_API_PORT_80_TCP_PROTO": "tcp",
		"WEB_API_PORT_80_TCP_PORT": "80", "WEB_API_PORT_80_TCP_ADDR": "10.0.0.20", "WEB_API_PORT_53_UDP": "udp://10.0.0.20:53",
		"WEB_PORT": "tcp://[fd00::1]:8080", "WEB_SERVICE_HOST": "mine", "URL": "$(WEB_PORT)",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if _, ok := env["HEADLESS_SERVICE_HOST"]; ok {
		t.Error("a headless Service has no variables")
	}
	names := []string{}
	for _, e := range spec.Containers[0].Env {
		names = append(names, e.Name)
	}
	if slices.Index(names, "WEB_PORT") > slices.Index(names, "URL") || slices.Index(names, "WEB_SERVICE_HOST") != len(names)-2 {
		t.Errorf("order %v: service variables first, the container's own (winning) after", names)
	}
	if len(spec.InitContainers[0].Env) == 0 {
		t.Error("init containers get the variables too")
	}
}

func TestPhysicalPodNetwork(t *testing.T) {
	virtual := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	virtual.Namespace, virtual.Name = "shop", "web"
	pod := PhysicalPod(virtual, Translation{MountNamespace: "m", PhysicalName: "p", Network: &NetworkView{dnsServer: "10.0.0.10", domain: "cluster.local"}})
	if pod.Spec.DNSPolicy != corev1.DNSNone || pod.Spec.DNSConfig.Nameservers[0] != "10.0.0.10" || *pod.Spec.EnableServiceLinks {
		t.Errorf("physical pod spec %+v", pod.Spec)
	}
}
