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

package csrapproval

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"net/url"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

const syncerUser = "system:serviceaccount:kubeocean-system:kubeocean-syncer"

// testSyncers runs the syncer of binding worker-1, whose pods have
// 10.0.0.5 and 10.0.0.6.
type testSyncers struct{}

func (testSyncers) IsSyncer(username string) bool { return username == syncerUser }
func (testSyncers) Serves(binding string) bool    { return binding == "worker-1" }
func (testSyncers) PodIPs(binding string) []net.IP {
	if binding != "worker-1" {
		return nil
	}
	return []net.IP{net.ParseIP("10.0.0.5"), net.ParseIP("10.0.0.6")}
}

// request is the x509 request a test CSR carries.
type request struct {
	cn, org string
	ips     []string
	dns     []string
	uri     string
}

func goodRequest() request {
	return request{cn: CommonName("worker-1"), org: Organization, ips: []string{"10.0.0.5"}}
}

func makeCSR(t *testing.T, r request, mutate func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.CertificateRequest{Subject: pkix.Name{CommonName: r.cn}, DNSNames: r.dns}
	if r.org != "" {
		template.Subject.Organization = []string{r.org}
	}
	for _, ip := range r.ips {
		template.IPAddresses = append(template.IPAddresses, net.ParseIP(ip))
	}
	if r.uri != "" {
		u, _ := url.Parse(r.uri)
		template.URIs = []*url.URL{u}
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, template, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: certificatesv1.KubeletServingSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
			Username:   syncerUser,
		},
	}
	if mutate != nil {
		mutate(csr)
	}
	return csr
}

func TestDecide(t *testing.T) {
	with := func(f func(*request)) request {
		r := goodRequest()
		f(&r)
		return r
	}
	tests := []struct {
		name   string
		req    request
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   Decision
	}{
		{name: "a syncer's serving certificate for its pod IPs", req: with(func(r *request) { r.ips = []string{"10.0.0.5", "10.0.0.6"} }), want: Approve},
		{name: "key encipherment too", req: goodRequest(), want: Approve, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageKeyEncipherment)
		}},
		// Left alone.
		{name: "another signer", req: goodRequest(), want: Ignore, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
		}},
		{name: "a node's kubelet", req: goodRequest(), want: Ignore, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Username = "system:node:worker-a"
		}},
		{name: "another ServiceAccount", req: goodRequest(), want: Ignore, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Username = "system:serviceaccount:kubeocean-system:default"
		}},
		{name: "already denied", req: goodRequest(), want: Ignore, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
		}},
		// Refused.
		{name: "another binding's name", req: with(func(r *request) { r.cn = CommonName("worker-2") }), want: Deny},
		{name: "a real node's name", req: with(func(r *request) { r.cn = "system:node:worker-a" }), want: Deny},
		{name: "no organization", req: with(func(r *request) { r.org = "" }), want: Deny},
		{name: "system:masters", req: with(func(r *request) { r.org = "system:masters" }), want: Deny},
		{name: "an IP of no syncer pod (yet)", req: with(func(r *request) { r.ips = []string{"10.0.0.5", "10.0.0.9"} }), want: Pending},
		{name: "no IP", req: with(func(r *request) { r.ips = nil }), want: Deny},
		{name: "a DNS name", req: with(func(r *request) { r.dns = []string{"kubernetes.default.svc"} }), want: Deny},
		{name: "a URI", req: with(func(r *request) { r.uri = "spiffe://cluster/ns/x" }), want: Deny},
		{name: "client auth", req: goodRequest(), want: Deny, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = append(c.Spec.Usages, certificatesv1.UsageClientAuth)
		}},
		{name: "no server auth", req: goodRequest(), want: Deny, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}
		}},
		{name: "not a certificate request", req: goodRequest(), want: Deny, mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Decide(makeCSR(t, tt.req, tt.mutate), testSyncers{})
			if got != tt.want {
				t.Errorf("Decide = %v (%s), want %v", got, reason, tt.want)
			}
			if reason == "" {
				t.Error("no reason given")
			}
		})
	}
}

func TestRecord(t *testing.T) {
	for _, tt := range []struct {
		decision Decision
		want     certificatesv1.RequestConditionType
	}{{Approve, certificatesv1.CertificateApproved}, {Deny, certificatesv1.CertificateDenied}, {Ignore, ""}} {
		csr := makeCSR(t, goodRequest(), nil)
		client := fake.NewClientset(csr)
		client.ClearActions()
		if err := Record(t.Context(), client.CertificatesV1().CertificateSigningRequests(), csr, tt.decision, "because"); err != nil {
			t.Fatal(err)
		}
		actions := client.Actions()
		if tt.want == "" {
			if len(actions) != 0 {
				t.Errorf("Ignore wrote %v", actions)
			}
			continue
		}
		if len(actions) != 1 || actions[0].GetVerb() != "update" || actions[0].GetSubresource() != "approval" {
			t.Fatalf("%v: actions %v, want one update of the approval subresource", tt.decision, actions)
		}
		updated := actions[0].(clienttesting.UpdateAction).GetObject().(*certificatesv1.CertificateSigningRequest)
		if !slices.ContainsFunc(updated.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
			return c.Type == tt.want && c.Status == corev1.ConditionTrue && c.Message == "because"
		}) {
			t.Errorf("%v: conditions %+v, want %s", tt.decision, updated.Status.Conditions, tt.want)
		}
		if len(csr.Status.Conditions) != 0 {
			t.Error("Record changed the object it was given")
		}
	}
}
