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

package serving

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// Certificate is a server's TLS certificate: a key pair in files, reloaded
// when they change (a Secret mounted as a volume, e.g. one that
// cert-manager renews), or, without files, a self-signed certificate made
// in memory at start-up.
type Certificate struct {
	name    string
	content dynamiccertificates.CertKeyContentProvider
	// files is set when content reloads from files.
	files *dynamiccertificates.DynamicCertKeyPairContent

	mu       sync.Mutex
	lastCert []byte
	lastKey  []byte
	parsed   *tls.Certificate
}

// NewCertificate loads certFile and keyFile, or, when both are "", makes a
// self-signed certificate for host (a DNS name or an IP) and the extra
// IPs. name tells the certificate apart in logs and errors.
func NewCertificate(name, certFile, keyFile, host string, ips ...net.IP) (*Certificate, error) {
	if certFile != "" || keyFile != "" {
		files, err := dynamiccertificates.NewDynamicServingContentFromFiles(name, certFile, keyFile)
		if err != nil {
			return nil, err
		}
		return &Certificate{name: name, content: files, files: files}, nil
	}
	cert, key, err := selfSigned(host, ips)
	if err != nil {
		return nil, fmt.Errorf("making a self-signed %s certificate: %w", name, err)
	}
	content, err := dynamiccertificates.NewStaticCertKeyContent(name+"-self-signed", cert, key)
	if err != nil {
		return nil, err
	}
	return &Certificate{name: name, content: content}, nil
}

// selfSignedValidity is the lifetime of a self-signed certificate; a new
// one is made at every start.
const selfSignedValidity = 365 * 24 * time.Hour

// selfSigned makes a self-signed serving certificate for host (a DNS name,
// or an IP also in ips) with an ECDSA P-256 key: the virtual apiserver
// opens a TLS connection to the kubelet API for every exec, attach and
// port-forward, and an ECDSA signature costs a fraction of an RSA one in
// each handshake.
func selfSigned(host string, ips []net.IP) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-time.Hour), NotAfter: now.Add(selfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:           ips,
		BasicConstraintsValid: true,
	}
	if net.ParseIP(host) == nil {
		template.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// Run reloads the files when they change, until ctx ends.
func (c *Certificate) Run(ctx context.Context) {
	if c.files != nil {
		c.files.Run(ctx, 1)
	}
}

// GetCertificate serves tls.Config.GetCertificate with the current pair.
func (c *Certificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert, key := c.content.CurrentCertKeyContent()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed != nil && bytes.Equal(cert, c.lastCert) && bytes.Equal(key, c.lastKey) {
		return c.parsed, nil
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("%s serving certificate: %w", c.name, err)
	}
	c.lastCert, c.lastKey, c.parsed = cert, key, &pair
	return c.parsed, nil
}

// TLSConfig serves c and asks clients for a certificate, which an Auth
// verifies against the cluster's client CA (that may change while the
// server runs, so the TLS handshake does not check it).
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		GetCertificate: c.GetCertificate,
		ClientAuth:     tls.RequestClientCert,
		MinVersion:     tls.VersionTLS12,
	}
}
