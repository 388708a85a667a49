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
	"crypto/tls"
	"net"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/internal/serving"
)

// ServingCertificate is the kubelet API's TLS certificate: a key pair in
// files, reloaded when they change (a Secret mounted as a volume, e.g. one
// that cert-manager renews); one issued through a
// CertificateSigningRequest and renewed before it expires; or a
// self-signed certificate, for development and tests and, in CSR mode,
// until the first certificate is issued. The virtual apiserver verifies it
// only when it runs with --kubelet-certificate-authority.
type ServingCertificate struct {
	// Certificate is the files' pair or the self-signed one.
	*serving.Certificate
	// csr is set when the certificate is issued through a
	// CertificateSigningRequest; Certificate is then the self-signed
	// stand-in.
	csr     *csrSource
	metrics *Metrics
}

// NewServingCertificate loads certFile and keyFile (reloaded when they
// change), or, when both are "", makes a self-signed certificate for
// address, for development and tests.
func NewServingCertificate(certFile, keyFile, address string) (*ServingCertificate, error) {
	var ips []net.IP
	if ip := net.ParseIP(address); ip != nil {
		ips = append(ips, ip)
	}
	host := address
	if host == "" || ips != nil {
		host = "kubeocean-syncer"
	}
	c, err := serving.NewCertificate("kubelet-api-serving", certFile, keyFile, host, ips...)
	if err != nil {
		return nil, err
	}
	return &ServingCertificate{Certificate: c}, nil
}

// NewCSRServingCertificate asks the virtual cluster (client) for the
// serving certificate of binding's syncer at the IP address address
// through a CertificateSigningRequest of signer
// kubernetes.io/kubelet-serving, which the manager approves (see
// internal/manager/csrapproval) and the virtual cluster's controller-manager
// signs. Until it is issued, a self-signed certificate is served. metrics
// may be nil.
func NewCSRServingCertificate(client kubernetes.Interface, binding, address string, metrics *Metrics) (*ServingCertificate, error) {
	csr, err := newCSRSource(client, binding, net.ParseIP(address))
	if err != nil {
		return nil, err
	}
	c, err := NewServingCertificate("", "", address)
	if err != nil {
		return nil, err
	}
	c.csr, c.metrics = csr, metrics
	return c, nil
}

// Run reloads the files when they change, or requests and renews the
// certificate, until ctx ends.
func (c *ServingCertificate) Run(ctx context.Context) {
	if c.csr == nil {
		c.Certificate.Run(ctx)
		return
	}
	if err := c.csr.run(ctx, c.metrics); err != nil {
		klog.FromContext(ctx).Error(err, "Serving certificate through a CertificateSigningRequest: serving a self-signed one")
	}
}

// GetCertificate serves tls.Config.GetCertificate with the issued
// certificate, or the files' or the self-signed one.
func (c *ServingCertificate) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c.csr != nil {
		if issued := c.csr.current(); issued != nil {
			return issued, nil
		}
	}
	return c.Certificate.GetCertificate(hello)
}

// TLSConfig is serving.Certificate's, serving GetCertificate.
func (c *ServingCertificate) TLSConfig() *tls.Config {
	config := c.Certificate.TLSConfig()
	config.GetCertificate = c.GetCertificate
	return config
}
