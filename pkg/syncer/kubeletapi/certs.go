package kubeletapi

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
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// ServingCertificate is the kubelet API's TLS certificate: a key pair in
// files, reloaded when they change (a Secret mounted as a volume, e.g. one
// that cert-manager renews); one issued through a
// CertificateSigningRequest and renewed before it expires; or a
// self-signed certificate, for development and tests and, in CSR mode,
// until the first certificate is issued. The virtual apiserver verifies it
// only when it runs with --kubelet-certificate-authority.
type ServingCertificate struct {
	content dynamiccertificates.CertKeyContentProvider
	// files is set when content reloads from files.
	files *dynamiccertificates.DynamicCertKeyPairContent
	// csr is set when the certificate is issued through a
	// CertificateSigningRequest; content is then the self-signed stand-in.
	csr     *csrSource
	metrics *Metrics

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
	return newSelfSigned(address)
}

// NewCSRServingCertificate asks the virtual cluster (client) for the
// serving certificate of binding's syncer at the IP address address
// through a CertificateSigningRequest of signer
// kubernetes.io/kubelet-serving, which the manager approves (see
// pkg/manager/csrapproval) and the virtual cluster's controller-manager
// signs. Until it is issued, a self-signed certificate is served. metrics
// may be nil.
func NewCSRServingCertificate(client kubernetes.Interface, binding, address string, metrics *Metrics) (*ServingCertificate, error) {
	csr, err := newCSRSource(client, binding, net.ParseIP(address))
	if err != nil {
		return nil, err
	}
	c, err := newSelfSigned(address)
	if err != nil {
		return nil, err
	}
	c.csr, c.metrics = csr, metrics
	return c, nil
}

func newSelfSigned(address string) (*ServingCertificate, error) {
	var ips []net.IP
	if ip := net.ParseIP(address); ip != nil {
		ips = append(ips, ip)
	}
	host := address
	if host == "" || ips != nil {
		host = "kubeocean-syncer"
	}
	cert, key, err := selfSigned(host, ips)
	if err != nil {
		return nil, fmt.Errorf("making a self-signed kubelet API certificate: %w", err)
	}
	content, err := dynamiccertificates.NewStaticCertKeyContent("kubelet-api-self-signed", cert, key)
	if err != nil {
		return nil, err
	}
	return &ServingCertificate{content: content}, nil
}

// selfSignedValidity is the lifetime of a self-signed certificate; a new
// one is made at every start.
const selfSignedValidity = 365 * 24 * time.Hour

// selfSigned makes a self-signed serving certificate for host and ips with
// an ECDSA P-256 key: the virtual apiserver opens a TLS connection for
// every exec, attach and port-forward, and an ECDSA signature costs a
// fraction of an RSA one in each handshake.
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
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{host}, IPAddresses: ips,
		BasicConstraintsValid: true,
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

// Run reloads the files when they change, or requests and renews the
// certificate, until ctx ends.
func (c *ServingCertificate) Run(ctx context.Context) {
	switch {
	case c.files != nil:
		c.files.Run(ctx, 1)
	case c.csr != nil:
		if err := c.csr.run(ctx, c.metrics); err != nil {
			klog.FromContext(ctx).Error(err, "Serving certificate through a CertificateSigningRequest: serving a self-signed one")
		}
	}
}

// GetCertificate serves tls.Config.GetCertificate with the current pair.
func (c *ServingCertificate) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c.csr != nil {
		if issued := c.csr.current(); issued != nil {
			return issued, nil
		}
	}
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
