package kubeletapi

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

// ServingCertificate is the kubelet API's TLS certificate: a key pair in
// files, reloaded when they change (a Secret mounted as a volume, e.g. one
// that cert-manager renews), or, without files, a self-signed certificate
// for development and tests. The virtual apiserver verifies it only when
// it runs with --kubelet-certificate-authority.
type ServingCertificate struct {
	content dynamiccertificates.CertKeyContentProvider
	// files is set when content reloads from files.
	files *dynamiccertificates.DynamicCertKeyPairContent

	mu       sync.Mutex
	lastCert []byte
	lastKey  []byte
	parsed   *tls.Certificate
}

// NewServingCertificate loads certFile and keyFile, or, when both are "",
// makes a self-signed certificate for address.
func NewServingCertificate(certFile, keyFile, address string) (*ServingCertificate, error) {
	if certFile != "" || keyFile != "" {
		files, err := dynamiccertificates.NewDynamicServingContentFromFiles("kubelet-api-serving", certFile, keyFile)
		if err != nil {
			return nil, err
		}
		return &ServingCertificate{content: files, files: files}, nil
	}
	var ips []net.IP
	if ip := net.ParseIP(address); ip != nil {
		ips = append(ips, ip)
	}
	host := address
	if host == "" || ips != nil {
		host = "kubeocean-syncer"
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(host, ips, nil)
	if err != nil {
		return nil, fmt.Errorf("making a self-signed kubelet API certificate: %w", err)
	}
	content, err := dynamiccertificates.NewStaticCertKeyContent("kubelet-api-self-signed", cert, key)
	if err != nil {
		return nil, err
	}
	return &ServingCertificate{content: content}, nil
}

// Run reloads the files when they change, until ctx ends.
func (c *ServingCertificate) Run(ctx context.Context) {
	if c.files != nil {
		c.files.Run(ctx, 1)
	}
}

// GetCertificate serves tls.Config.GetCertificate with the current pair.
func (c *ServingCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cert, key := c.content.CurrentCertKeyContent()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.parsed != nil && bytes.Equal(cert, c.lastCert) && bytes.Equal(key, c.lastKey) {
		return c.parsed, nil
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, fmt.Errorf("kubelet API serving certificate: %w", err)
	}
	c.lastCert, c.lastKey, c.parsed = cert, key, &pair
	return c.parsed, nil
}
