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

package stack

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/controlplane"
)

// DNS is a binding's kubeocean-dns run as a process on loopback, since
// kwok runs no container of the Deployment the syncer made for it.
type DNS struct {
	*controlplane.Process
	// Address is host:port it answers on, over UDP and TCP.
	Address string
	// Args are the arguments of the binding's DNS Deployment it runs with.
	Args []string
}

// StartDNS runs bin (kubeocean-dns) with the arguments of the DNS
// Deployment the syncer keeps in mountNamespace (--binding-uid,
// --cluster-domain, --kubernetes-address) and the token of that
// Deployment's ServiceAccount, so it reads with exactly the Role the syncer
// grants it. Listen addresses are free loopback ports; extra args come
// last. It returns once /readyz says the caches have synced.
func (s *Stack) StartDNS(ctx context.Context, bin, mountNamespace string, extra ...string) (*DNS, error) {
	var deployment *appsv1.Deployment
	err := Poll(ctx, "the syncer keeps the DNS Deployment and ServiceAccount of "+mountNamespace, func(ctx context.Context) (string, error) {
		var err error
		if deployment, err = s.PhysicalKube.AppsV1().Deployments(mountNamespace).Get(ctx, kubeoceanv1alpha1.DNSName, metav1.GetOptions{}); err != nil {
			return err.Error(), nil
		}
		// The token request would create a ServiceAccount that is not
		// the binding's, which the syncer then leaves alone.
		if _, err := s.PhysicalKube.CoreV1().ServiceAccounts(mountNamespace).Get(ctx, kubeoceanv1alpha1.DNSName, metav1.GetOptions{}); err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
	if err != nil {
		return nil, err
	}
	token, err := s.Physical.ServiceAccountToken(ctx, mountNamespace, kubeoceanv1alpha1.DNSName)
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(s.Physical.Dir, "kubeocean-dns-"+mountNamespace+".kubeconfig")
	if err := os.WriteFile(kubeconfig, s.Physical.KubeconfigForToken(token), 0o600); err != nil {
		return nil, err
	}
	addrs, err := controlplane.FreeLoopbackAddresses(3)
	if err != nil {
		return nil, err
	}
	listen, metrics, health := addrs[0], addrs[1], addrs[2]
	var args []string
	for _, arg := range deployment.Spec.Template.Spec.Containers[0].Args {
		flag, _, _ := strings.Cut(arg, "=")
		if !slices.Contains([]string{"--listen-address", "--metrics-bind-address", "--health-probe-bind-address"}, flag) {
			args = append(args, arg)
		}
	}
	all := append([]string{"--kubeconfig=" + kubeconfig, "--listen-address=" + listen,
		"--metrics-bind-address=" + metrics, "--health-probe-bind-address=" + health}, append(args, extra...)...)
	p, err := s.Physical.StartProcess("kubeocean-dns-"+mountNamespace, bin, all...)
	if err != nil {
		return nil, err
	}
	d := &DNS{Process: p, Address: listen, Args: args}
	err = Poll(ctx, "kubeocean-dns of "+mountNamespace+" is ready", func(ctx context.Context) (string, error) {
		if exited, err := p.Exited(); exited {
			return "", fmt.Errorf("kubeocean-dns exited: %v: %s", err, p.Tail(10))
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+health+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error(), nil
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return resp.Status, nil
		}
		return "", nil
	})
	if err != nil {
		p.Stop()
		return nil, err
	}
	return d, nil
}

// Answer is what a DNS server answered to one question.
type Answer struct {
	Rcode int
	// Records are the answer section as "TYPE data" (e.g. "A 10.0.0.7",
	// "SRV 0 50 80 web.demo.svc.cluster.local."), sorted.
	Records []string
}

// RcodeName is the answer's rcode as dig prints it (NOERROR, NXDOMAIN, …).
func (a Answer) RcodeName() string { return dns.RcodeToString[a.Rcode] }

func (a Answer) String() string {
	return a.RcodeName() + " [" + strings.Join(a.Records, ", ") + "]"
}

// Query asks addr one question over UDP, and again over TCP when the
// answer comes back truncated, as a stub resolver does.
func Query(addr, name string, qtype uint16) (Answer, error) {
	question := new(dns.Msg).SetQuestion(dns.Fqdn(name), qtype)
	client := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	resp, _, err := client.Exchange(question, addr)
	if err == nil && resp.Truncated {
		client.Net = "tcp"
		resp, _, err = client.Exchange(question, addr)
	}
	if err != nil {
		return Answer{}, fmt.Errorf("%s %s: %w", name, dns.TypeToString[qtype], err)
	}
	a := Answer{Rcode: resp.Rcode}
	for _, rr := range resp.Answer {
		h := rr.Header()
		a.Records = append(a.Records, dns.TypeToString[h.Rrtype]+" "+strings.TrimPrefix(rr.String(), h.String()))
	}
	slices.Sort(a.Records)
	return a, nil
}
