package kubeletapi

import (
	"net"

	"github.com/kubeocean/kubeocean/pkg/serving"
)

// ServingCertificate is the kubelet API's TLS certificate. The virtual
// apiserver verifies it only when it runs with
// --kubelet-certificate-authority.
type ServingCertificate = serving.Certificate

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
	return serving.NewCertificate("kubelet-api-serving", certFile, keyFile, host, ips...)
}
