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
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	certutil "k8s.io/client-go/util/cert"
)

func TestSelfSignedCertificateNamesTheAddress(t *testing.T) {
	c, err := NewServingCertificate("", "", "10.1.2.3")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := c.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("10.1.2.3"); err != nil {
		t.Fatal(err)
	}
}

// TestCertificateFilesAreReloaded: a renewed Secret (files replaced in its
// volume) is served without a restart.
func TestCertificateFilesAreReloaded(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	write := func(host string) {
		cert, key, err := certutil.GenerateSelfSignedCertKey(host, []net.IP{net.ParseIP("127.0.0.1")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(certFile, cert, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, key, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	commonName := func(c *ServingCertificate) string {
		pair, err := c.GetCertificate(nil)
		if err != nil {
			return err.Error()
		}
		leaf, _ := x509.ParseCertificate(pair.Certificate[0])
		return leaf.Subject.CommonName
	}
	write("first")
	c, err := NewServingCertificate(certFile, keyFile, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)
	if got := commonName(c); got[:5] != "first" {
		t.Fatalf("serving %q", got)
	}
	write("second")
	deadline := time.Now().Add(30 * time.Second)
	for commonName(c)[:6] != "second" {
		if time.Now().After(deadline) {
			t.Fatalf("still serving %q after the files changed", commonName(c))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestMetricsAreSharedByTheSyncersOfAProcess(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewMetrics(reg)
	if err != nil || a.requests != b.requests || a.bytes != b.bytes {
		t.Fatalf("second registration: %v, shared %v", err, a.requests == b.requests)
	}
}
