package kubeletapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
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
