package serving

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
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
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, ips, nil)
	if err != nil {
		return nil, fmt.Errorf("making a self-signed %s certificate: %w", name, err)
	}
	content, err := dynamiccertificates.NewStaticCertKeyContent(name+"-self-signed", cert, key)
	if err != nil {
		return nil, err
	}
	return &Certificate{name: name, content: content}, nil
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
