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

package kubeletapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
)

// TestCSRServingCertificate: the syncer serves a self-signed certificate,
// asks for its serving certificate with the subject, address, signer and
// usages the manager approves, and serves the issued one as soon as it is
// signed.
func TestCSRServingCertificate(t *testing.T) {
	client := fake.NewClientset()
	metrics, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCSRServingCertificate(client, "worker-1", "10.0.0.5", metrics)
	if err != nil {
		t.Fatal(err)
	}
	before, err := c.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var csr *certificatesv1.CertificateSigningRequest
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		csr = &list.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no request made: %v", err)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	request, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if request.Subject.CommonName != "system:node:kubeocean-syncer-worker-1" || len(request.Subject.Organization) != 1 ||
		request.Subject.Organization[0] != "system:nodes" || len(request.IPAddresses) != 1 || request.IPAddresses[0].String() != "10.0.0.5" ||
		len(request.DNSNames) != 0 {
		t.Errorf("request for %+v %v %v", request.Subject, request.IPAddresses, request.DNSNames)
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		t.Errorf("signer %s", csr.Spec.SignerName)
	}
	for _, u := range csr.Spec.Usages {
		if u != certificatesv1.UsageDigitalSignature && u != certificatesv1.UsageServerAuth {
			t.Errorf("usage %s", u)
		}
	}
	if served, _ := c.GetCertificate(nil); served != before {
		t.Error("served something else than the self-signed certificate before one was issued")
	}

	// Approve and sign it, as the manager and the controller-manager would.
	csr.Status.Certificate = signed(t, request)
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateStatus(t.Context(), csr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		served, err := c.GetCertificate(nil)
		return err == nil && served != before && served.Leaf != nil && served.Leaf.Subject.CommonName == request.Subject.CommonName, err
	})
	if err != nil {
		t.Fatalf("the issued certificate is not served: %v", err)
	}
}

func signed(t *testing.T, request *x509.CertificateRequest) []byte {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: request.Subject, IPAddresses: request.IPAddresses,
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca, request.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
