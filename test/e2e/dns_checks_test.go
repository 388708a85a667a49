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

package e2e

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// upstream stands in for the resolvers kubeocean-dns forwards to, and for
// the physical cluster's DNS: it answers every A question with
// upstreamIP and every PTR with a name of a physical Service, and records
// what it was asked.
type upstream struct {
	addr  string
	mu    sync.Mutex
	asked []string
}

const upstreamIP = "203.0.113.7"

func startUpstream(t *testing.T) *upstream {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	step(t, "listen for the upstream", err)
	u := &upstream{addr: pc.LocalAddr().String()}
	server := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(u.serve)}
	go func() { _ = server.ActivateAndServe() }()
	t.Cleanup(func() { _ = server.Shutdown() })
	return u
}

func (u *upstream) serve(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg).SetReply(r)
	q := r.Question[0]
	u.mu.Lock()
	u.asked = append(u.asked, strings.ToLower(q.Name))
	u.mu.Unlock()
	hdr := dns.RR_Header{Name: q.Name, Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: 30}
	switch q.Qtype {
	case dns.TypeA:
		m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: net.ParseIP(upstreamIP)})
	case dns.TypePTR:
		m.Answer = append(m.Answer, &dns.PTR{Hdr: hdr, Ptr: "secret.physical-only.svc.cluster.local."})
	}
	_ = w.WriteMsg(m)
}

// inDomain lists the names of the cluster domain the upstream was asked.
func (u *upstream) inDomain() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(u.asked), func(n string) bool { return !dns.IsSubDomain("cluster.local.", n) })
}

// checkPhysicalNamesHidden: the physical cluster's own Services (one in
// another namespace, the DNS Service and a mirror under their physical
// names) are NXDOMAIN and never forwarded, nor is a reverse name that
// would reveal one; kubernetes.default is the virtual apiserver.
func checkPhysicalNamesHidden(t *testing.T, addr string, up *upstream) {
	ctx, kube := t.Context(), world.PhysicalKube
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "physical-only"}}, metav1.CreateOptions{})
	step(t, "create physical namespace physical-only", err)
	secret, err := kube.CoreV1().Services("physical-only").Create(ctx, service("physical-only", "secret",
		corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}), metav1.CreateOptions{})
	step(t, "create physical Service physical-only/secret", err)
	if a := lookup(t, addr, "example.org.", dns.TypeA); a.Rcode != dns.RcodeSuccess || !slices.Equal(a.Records, []string{"A " + upstreamIP}) {
		t.Errorf("a name outside the cluster domain: %s, want the upstream's A %s", a, upstreamIP)
	}
	for _, name := range []string{
		"secret.physical-only" + domain,
		"kubernetes.default" + domain,
		kubeoceanv1alpha1.DNSName + "." + stack.MountNamespace + domain,
		kubeoceanv1alpha1.PhysicalName(shop, "api") + "." + stack.MountNamespace + domain,
	} {
		a := lookup(t, addr, name, dns.TypeA)
		if strings.HasPrefix(name, "kubernetes.") {
			if !slices.Equal(a.Records, []string{"A 127.0.0.1"}) {
				t.Errorf("%s: %s, want the virtual apiserver's address 127.0.0.1", name, a)
			}
			continue
		}
		if a.Rcode != dns.RcodeNameError {
			t.Errorf("physical Service name %s: %s, want NXDOMAIN", name, a)
		}
	}
	reverse, err := dns.ReverseAddr(secret.Spec.ClusterIP)
	step(t, "reverse name", err)
	if a := lookup(t, addr, reverse, dns.TypePTR); a.Rcode != dns.RcodeNameError {
		t.Errorf("PTR of a physical ClusterIP answered by the physical DNS: %s, want NXDOMAIN", a)
	}
	if asked := up.inDomain(); len(asked) > 0 {
		t.Errorf("names of the cluster domain forwarded upstream: %q", asked)
	}
}

// checkPodResolver: a physical pod's resolver is the DNS Service with the
// virtual namespace's search path, and short names resolve through it as
// a stub resolver expands them; StatefulSet pods keep their names.
func checkPodResolver(t *testing.T, addr string) {
	ctx := t.Context()
	dnsService, err := world.PhysicalKube.CoreV1().Services(stack.MountNamespace).Get(ctx, kubeoceanv1alpha1.DNSName, metav1.GetOptions{})
	step(t, "get the DNS Service", err)
	apiPods, err := world.VirtualKube.CoreV1().Pods(shop).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
	step(t, "list api pods", err)
	if len(apiPods.Items) == 0 {
		t.Fatal("no api pod")
	}
	pod := physicalPod(t, apiPods.Items[0].Name)
	config := pod.Spec.DNSConfig
	wantSearch := []string{shop + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}
	if pod.Spec.DNSPolicy != corev1.DNSNone || config == nil || !slices.Equal(config.Nameservers, []string{dnsService.Spec.ClusterIP}) ||
		len(config.Searches) < 3 || !slices.Equal(config.Searches[:3], wantSearch) ||
		!slices.ContainsFunc(config.Options, func(o corev1.PodDNSConfigOption) bool { return o.Name == "ndots" && valueOf(o.Value) == "5" }) {
		t.Fatalf("physical pod %s: dnsPolicy %s, dnsConfig %s; want nameserver %s, search %q, ndots:5",
			pod.Name, pod.Spec.DNSPolicy, yamlOf(config), dnsService.Spec.ClusterIP, wantSearch)
	}
	db0 := physicalPod(t, "db-0")
	if db0.Spec.Hostname != "db-0" || db0.Spec.Subdomain != kubeoceanv1alpha1.PhysicalName(shop, "db") {
		t.Errorf("physical db-0: hostname %q subdomain %q, want db-0 and the mirror of db", db0.Spec.Hostname, db0.Spec.Subdomain)
	}
	apiIP := mirrorOf(t, shop, "api").Spec.ClusterIP
	for name, want := range map[string]string{"api": apiIP, "api.shop": apiIP, "api.shop.svc": apiIP, "db-0.db": db0.Status.PodIP, "ext": apiIP} {
		if got := resolveAsPod(t, addr, config, name); !slices.Contains(got, "A "+want) {
			t.Errorf("%q through the pod's search path: %q, want A %s", name, got, want)
		}
	}
}

func valueOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// resolveAsPod expands name as a stub resolver with config does (search
// list first below ndots dots) and returns the first answer with records.
func resolveAsPod(t *testing.T, addr string, config *corev1.PodDNSConfig, name string) []string {
	var candidates []string
	for _, search := range config.Searches {
		candidates = append(candidates, name+"."+search+".")
	}
	if strings.Count(name, ".") >= 5 {
		candidates = slices.Insert(candidates, 0, name+".")
	} else {
		candidates = append(candidates, name+".")
	}
	for _, c := range candidates {
		if a := lookup(t, addr, c, dns.TypeA); a.Rcode == dns.RcodeSuccess && len(a.Records) > 0 {
			return a.Records
		}
	}
	return nil
}

// checkTwoVirtualClusters binds the physical cluster to a second virtual
// cluster (its own apiserver, a syncer in this process, its own mount
// namespace) with Service demo/web, as the first one has: each binding's
// DNS server answers its own mirror's ClusterIP only, and neither answers
// a name only the other cluster has.
func checkTwoVirtualClusters(t *testing.T, addr, dnsBin, upstream string) {
	ctx := t.Context()
	second := controlplane.StartT(t, controlplane.Options{Name: "virtual-2"})
	step(t, "install CRDs in the second virtual cluster", testenv.InstallCRDs(ctx, second.Config()))
	web := func() *corev1.Service {
		return service(stack.AppNamespace, "web", corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}})
	}
	secondKube := second.Clientset()
	testenv.CreateNamespace(t, secondKube, stack.AppNamespace)
	for _, svc := range []*corev1.Service{web(), service(stack.AppNamespace, "only-second", web().Spec)} {
		_, err := secondKube.CoreV1().Services(stack.AppNamespace).Create(ctx, svc, metav1.CreateOptions{})
		step(t, "create Service "+svc.Name+" in the second virtual cluster", err)
	}
	testenv.CreateNamespace(t, world.VirtualKube, stack.AppNamespace)
	createServices(t, web())
	setServiceNamespaces(t, faraway, stack.AppNamespace)

	w2 := testenv.StartSyncer(t, second, world.Physical, "worker-2", "worker-2", syncer.Options{Workers: 2, PodWorkers: 2, NodeWorkers: 1})
	w2.UpdateBinding(t, func(binding *kubeoceanv1alpha1.ClusterBinding) {
		binding.Spec.ServiceNamespaces = []string{stack.AppNamespace}
	})
	server2, err := world.StartDNS(waitCtx(t), dnsBin, w2.Mount, "--upstream="+upstream)
	step(t, "start kubeocean-dns of the second binding", err)
	t.Cleanup(func() { logTailOnFailure(t, server2.Process); server2.Stop() })

	first := mirrorOf(t, stack.AppNamespace, "web").Spec.ClusterIP
	var second2 string
	waitFor(t, "the second binding's mirror of demo/web", func(ctx context.Context) (string, error) {
		m, err := world.PhysicalKube.CoreV1().Services(w2.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(stack.AppNamespace, "web"), metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		second2 = m.Spec.ClusterIP
		return "", nil
	})
	if first == second2 {
		t.Fatalf("both mirrors of demo/web have ClusterIP %s", first)
	}
	name := "web.demo" + domain
	eventuallyAnswers(t, addr, name, dns.TypeA, dns.RcodeSuccess, "A "+first)
	eventuallyAnswers(t, server2.Address, name, dns.TypeA, dns.RcodeSuccess, "A "+second2)
	for _, q := range []struct{ addr, name string }{
		{addr, "only-second.demo" + domain},
		{server2.Address, "api.shop" + domain},
		{server2.Address, "db.shop" + domain},
	} {
		if a := lookup(t, q.addr, q.name, dns.TypeA); a.Rcode != dns.RcodeNameError {
			t.Errorf("%s of the other virtual cluster: %s, want NXDOMAIN", q.name, a)
		}
	}
}

func bindingUID(t *testing.T) string {
	b, err := world.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(t.Context(), stack.BindingName, metav1.GetOptions{})
	step(t, "get the binding", err)
	return string(b.UID)
}

// dnsRBACYAML is the Role and RoleBinding the syncer made for the DNS
// server, as YAML for checkAudit.
func dnsRBACYAML(t *testing.T) string {
	ctx, rbac := t.Context(), world.PhysicalKube.RbacV1()
	role, err := rbac.Roles(stack.MountNamespace).Get(ctx, kubeoceanv1alpha1.DNSName, metav1.GetOptions{})
	step(t, "get the DNS Role", err)
	binding, err := rbac.RoleBindings(stack.MountNamespace).Get(ctx, kubeoceanv1alpha1.DNSName, metav1.GetOptions{})
	step(t, "get the DNS RoleBinding", err)
	role.APIVersion, role.Kind = "rbac.authorization.k8s.io/v1", "Role"
	binding.APIVersion, binding.Kind = "rbac.authorization.k8s.io/v1", "RoleBinding"
	var docs []string
	for _, obj := range []runtime.Object{role, binding} {
		data, err := yaml.Marshal(obj)
		step(t, "marshal", err)
		docs = append(docs, string(data))
	}
	return strings.Join(docs, "---\n")
}

// networkLeftovers lists the binding's mirrors and DNS objects, and any
// EndpointSlice, still in the mount namespace.
func networkLeftovers(ctx context.Context, uid string) ([]string, error) {
	kube, ns := world.PhysicalKube, stack.MountNamespace
	ours := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelBindingUID + "=" + uid}
	counts := map[string]func() (int, error){
		"Services": func() (int, error) { l, err := kube.CoreV1().Services(ns).List(ctx, ours); return len(l.Items), err },
		"EndpointSlices": func() (int, error) {
			l, err := kube.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"Deployments": func() (int, error) { l, err := kube.AppsV1().Deployments(ns).List(ctx, ours); return len(l.Items), err },
		"PodDisruptionBudgets": func() (int, error) {
			l, err := kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, ours)
			return len(l.Items), err
		},
		"ServiceAccounts": func() (int, error) {
			l, err := kube.CoreV1().ServiceAccounts(ns).List(ctx, ours)
			return len(l.Items), err
		},
		"Roles": func() (int, error) { l, err := kube.RbacV1().Roles(ns).List(ctx, ours); return len(l.Items), err },
		"RoleBindings": func() (int, error) {
			l, err := kube.RbacV1().RoleBindings(ns).List(ctx, ours)
			return len(l.Items), err
		},
	}
	var left []string
	for kind, count := range counts {
		n, err := count()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, kind))
		}
	}
	slices.Sort(left)
	return left, nil
}

// noRefusals fails the test if the audit log of cluster shows a refused
// request of ServiceAccount account (namespace/name).
func noRefusals(t *testing.T, cluster *controlplane.Cluster, account string) {
	requests, err := readAudit(cluster.AuditLogPath)
	step(t, "read the audit log of "+cluster.Name, err)
	namespace, name, _ := strings.Cut(account, "/")
	user := "system:serviceaccount:" + namespace + ":" + name
	mine := slices.DeleteFunc(requests, func(r request) bool { return r.User != user })
	if len(mine) == 0 {
		t.Errorf("%s: no request of %s in the audit log", cluster.Name, account)
	}
	for what, n := range refusedRequests(mine) {
		t.Errorf("%s: refused %d times: %s", cluster.Name, n, what)
	}
}
