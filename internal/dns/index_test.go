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
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// TestAnswersFollowTheInformers changes readiness, moves a Service to
// another virtual name and deletes it, through the API.
func TestAnswersFollowTheInformers(t *testing.T) {
	up := startUpstream(t, answerA)
	db := mirrorService("shop", "db", headlessSpec())
	epSlice := slice("db-1", db, ep("10.1.0.1", "db-0", true), ep("10.1.0.2", "db-1", true))
	s, kube, _ := testServer(t, []string{up.addr}, db, epSlice)
	ctx := context.Background()
	const name = "db.shop.svc.cluster.local."
	expect := func(what, name string, want ...string) {
		t.Helper()
		waitFor(t, what, func() bool { return slices.Equal(rdata(ask(t, s, name, dns.TypeA)), want) })
	}
	expect("both endpoints", name, "A 10.1.0.1", "A 10.1.0.2")

	epSlice = epSlice.DeepCopy()
	epSlice.Endpoints[1].Conditions.Ready = ptr.To(false)
	if _, err := kube.DiscoveryV1().EndpointSlices(testNamespace).Update(ctx, epSlice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("db-1 to leave", name, "A 10.1.0.1")
	expect("db-1's own name to go", "db-1.db.shop.svc.cluster.local.")

	// A slice handed to another binding leaves the answer.
	epSlice = epSlice.DeepCopy()
	epSlice.Labels[kubeoceanv1alpha1.LabelBindingUID] = "uid-2"
	if _, err := kube.DiscoveryV1().EndpointSlices(testNamespace).Update(ctx, epSlice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("the slice of another binding to leave", name)

	if err := kube.CoreV1().Services(testNamespace).Delete(ctx, db.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// A headless Service without endpoints is NXDOMAIN already, so the
	// delete shows in the index: the Service gauge drops to 0.
	waitFor(t, "the Service to leave the index", func() bool { return testutil.ToFloat64(s.metrics.services) == 0 })
	if rcode := ask(t, s, name, dns.TypeA).Rcode; rcode != dns.RcodeNameError {
		t.Errorf("rcode after the delete = %s, want NXDOMAIN", dns.RcodeToString[rcode])
	}
}

// TestIndexKeepsOneRecordPerVirtualName drives the handlers directly: a
// mirror whose annotations change moves its records and reverse names, and
// a tombstone removes it.
func TestIndexKeepsOneRecordPerVirtualName(t *testing.T) {
	idx := NewIndex(testBinding, "cluster.local", nil)
	h := idx.ServiceHandler()
	web := mirrorService("shop", "web", clusterIPSpec("10.0.0.10"))
	h.OnAdd(web, false)
	if idx.service("shop", "web") == nil || !idx.hasNamespace("shop") {
		t.Fatal("mirror not indexed")
	}
	if got := idx.reverseNames(mustAddr("10.0.0.10")); !slices.Equal(got, []string{"web.shop.svc.cluster.local."}) {
		t.Errorf("reverse names %q", got)
	}

	// Annotations that no longer match the name: the mirror is refused.
	moved := web.DeepCopy()
	moved.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] = "api"
	h.OnUpdate(web, moved)
	if idx.service("shop", "web") != nil || idx.service("shop", "api") != nil || len(idx.reverseNames(mustAddr("10.0.0.10"))) != 0 {
		t.Error("a mirror whose name is not its virtual name's physical name still answers")
	}
	h.OnUpdate(moved, web)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: testNamespace + "/" + web.Name, Obj: web})
	if idx.service("shop", "web") != nil || idx.hasNamespace("shop") || len(idx.reverse) != 0 || idx.records != 0 {
		t.Errorf("tombstone left records: %v %v %d", idx.namespaces, idx.reverse, idx.records)
	}
}

func TestBuildServiceFollowsTheEndpointSliceAPI(t *testing.T) {
	db := mirrorService("shop", "db", headlessSpec())
	terminating := ep("10.1.0.4", "db-3", false)
	terminating.Conditions.Terminating = ptr.To(true)
	unknown := ep("10.1.0.5", "db-4", true)
	unknown.Conditions.Ready = nil
	badHost := ep("10.1.0.6", "Not_A_Label", true)
	v6 := slice("db-v6", db, ep("fd00::1", "db-0", true))
	v4 := slice("db-v4", db, ep("10.1.0.1", "db-0", true), terminating, unknown, badHost)
	fqdnSlice := slice("db-fqdn", db, ep("10.1.0.9", "x", true))
	fqdnSlice.AddressType = "FQDN"

	s := buildService(virtualKey{"shop", "db"}, db, []*discoveryv1.EndpointSlice{v6, v4, fqdnSlice})

	if got := addrStrings(s.addrs); !slices.Equal(got, []string{"10.1.0.1", "10.1.0.5", "10.1.0.6", "fd00::1"}) {
		t.Errorf("addresses %q: want ready and unknown ones, no terminating, no FQDN, in slice-name order", got)
	}
	if got := addrStrings(s.hosts["db-0"]); !slices.Equal(got, []string{"10.1.0.1", "fd00::1"}) {
		t.Errorf("db-0 (dual-stack) %q", got)
	}
	if _, ok := s.hosts["10-1-0-6"]; !ok {
		t.Errorf("an invalid hostname is not replaced by the address name: %v", s.hosts)
	}
	if got := addressLabel(mustAddr("fd00::1")); got != "fd00-0000-0000-0000-0000-0000-0000-0001" {
		t.Errorf("IPv6 address label %q", got)
	}
	ext := buildService(virtualKey{"shop", "x"}, mirrorService("shop", "x", corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "bad name!"}), nil)
	if ext.externalName != "" {
		t.Errorf("invalid ExternalName kept: %q", ext.externalName)
	}
}

func TestReverseAddr(t *testing.T) {
	for name, want := range map[string]string{
		"4.3.2.1.in-addr.arpa.": "1.2.3.4",
		"1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.": "fd00::1",
		"3.2.1.in-addr.arpa.":    "",
		"04.3.2.1.in-addr.arpa.": "",
		"example.org.":           "",
	} {
		a, ok := reverseAddr(name)
		if got := map[bool]string{true: a.String(), false: ""}[ok]; got != want {
			t.Errorf("reverseAddr(%s) = %q, want %q", name, got, want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	valid := func() *Options {
		o := NewOptions()
		o.Namespace, o.BindingUID = "kubeocean-worker", "0b6a3f2e-1c1d-4a43-9d7e-6f0b8c1e2a3b"
		return o
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("defaults with namespace and UID: %v", err)
	}
	for flag, mutate := range map[string]func(*Options){
		"--namespace is required":   func(o *Options) { o.Namespace = "" },
		"--binding-uid is required": func(o *Options) { o.BindingUID = "" },
		"--listen-address":          func(o *Options) { o.ListenAddress = "1053" },
		"--cluster-domain":          func(o *Options) { o.ClusterDomain = "Not A Domain" },
		"--upstream":                func(o *Options) { o.Upstreams = []string{":53"} },
		"--kubernetes-address":      func(o *Options) { o.KubernetesAddress = "apiserver" },
		"--upstream-timeout":        func(o *Options) { o.UpstreamTimeout = 0 },
	} {
		o := valid()
		mutate(o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: error %v", flag, err)
		}
	}
	o := valid()
	o.Upstreams = []string{"10.0.0.53", "[fd00::53]:5353"}
	if got, err := o.upstreams(); err != nil || !slices.Equal(got, []string{"10.0.0.53:53", "[fd00::53]:5353"}) {
		t.Errorf("upstreams %q, %v", got, err)
	}
}

func TestUpstreamsDefaultToResolvConf(t *testing.T) {
	o := NewOptions()
	o.ResolvConf = filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(o.ResolvConf, []byte("search a.svc\nnameserver 10.0.0.2\nnameserver fd00::2\noptions ndots:5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := o.upstreams(); err != nil || !slices.Equal(got, []string{"10.0.0.2:53", "[fd00::2]:53"}) {
		t.Errorf("upstreams %q, %v", got, err)
	}
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func addrStrings(addrs []netip.Addr) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, a.String())
	}
	return out
}
