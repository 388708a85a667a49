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
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"sync"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
	"k8s.io/klog/v2"
)

// Subject of the serving certificate a syncer asks for: the signer
// kubernetes.io/kubelet-serving requires a node identity (organization
// system:nodes, common name system:node:<name>); a syncer's name is that
// of its binding, never a real node's. The manager's approver
// (internal/manager/csrapproval) checks exactly these.
const (
	csrOrganization     = "system:nodes"
	csrCommonNamePrefix = "system:node:kubeocean-syncer-"
)

// CSRCommonName is the common name of the serving certificate the syncer
// of binding asks for.
func CSRCommonName(binding string) string { return csrCommonNamePrefix + binding }

// csrSource is a serving certificate issued through a
// CertificateSigningRequest of signer kubernetes.io/kubelet-serving in the
// virtual cluster, kept in memory and renewed by client-go's certificate
// manager at 70–90 % of its lifetime, without a restart.
type csrSource struct {
	client   kubernetes.Interface
	template *x509.CertificateRequest
	binding  string
	store    *memoryStore

	mu      sync.Mutex
	manager certificate.Manager
}

func newCSRSource(client kubernetes.Interface, binding string, ip net.IP) (*csrSource, error) {
	if binding == "" {
		return nil, fmt.Errorf("a serving certificate through a CertificateSigningRequest needs the binding's name")
	}
	if ip == nil {
		return nil, fmt.Errorf("a serving certificate through a CertificateSigningRequest names the kubelet address, which must be an IP address")
	}
	return &csrSource{
		client: client, binding: binding, store: &memoryStore{},
		template: &x509.CertificateRequest{
			Subject:     pkix.Name{CommonName: CSRCommonName(binding), Organization: []string{csrOrganization}},
			IPAddresses: []net.IP{ip},
		},
	}, nil
}

// run requests the certificate and keeps it renewed until ctx ends.
func (s *csrSource) run(ctx context.Context, metrics *Metrics) error {
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("binding", s.binding))
	config := &certificate.Config{
		ClientsetFn:      func(*tls.Certificate) (kubernetes.Interface, error) { return s.client, nil },
		Template:         s.template,
		SignerName:       certificatesv1.KubeletServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: s.store,
		Name:             "kubelet-api-serving",
		Ctx:              &ctx,
	}
	if metrics != nil {
		config.CertificateRenewFailure = metrics.certificateRenewFailures
		config.CertificateRotation = metrics.certificateRotations
	}
	m, err := certificate.NewManager(config)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.manager = m
	s.mu.Unlock()
	m.Start()
	<-ctx.Done()
	m.Stop()
	return nil
}

// current is the issued certificate, or nil before one is issued (and
// once it has expired).
func (s *csrSource) current() *tls.Certificate {
	s.mu.Lock()
	m := s.manager
	s.mu.Unlock()
	if m == nil {
		return nil
	}
	return m.Current()
}

// memoryStore keeps the key pair in memory only: a restarted syncer asks
// for a new certificate, so no private key is ever written to disk.
type memoryStore struct {
	mu   sync.Mutex
	pair *tls.Certificate
}

var _ certificate.Store = (*memoryStore)(nil)

func (s *memoryStore) Current() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pair == nil {
		err := certificate.NoCertKeyError("no serving certificate issued yet")
		return nil, &err
	}
	return s.pair, nil
}

func (s *memoryStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pair = &pair
	return &pair, nil
}
