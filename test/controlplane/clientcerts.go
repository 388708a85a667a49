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

package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// KubeletClientUser is the identity the apiserver presents to kubelets
// (--kubelet-client-certificate): in system:masters, so that a kubelet in
// webhook mode (or Kubeocean's kubelet API) authorizes it for every node.
const KubeletClientUser = "kube-apiserver-kubelet-client"

// clientCertFiles are a client CA (--client-ca-file, published in the
// extension-apiserver-authentication ConfigMap for servers that delegate
// authentication) and the apiserver's kubelet client certificate signed by
// it.
type clientCertFiles struct {
	caCert, caKey           string
	kubeletCert, kubeletKey string
}

func writeClientCerts(dir string) (clientCertFiles, error) {
	files := clientCertFiles{
		caCert: filepath.Join(dir, "client-ca.crt"), caKey: filepath.Join(dir, "client-ca.key"),
		kubeletCert: filepath.Join(dir, "kubelet-client.crt"), kubeletKey: filepath.Join(dir, "kubelet-client.key"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubeocean-test-client-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return files, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, err
	}
	template := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: KubeletClientUser, Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return files, err
	}
	for path, block := range map[string]func() (string, []byte, error){
		files.caCert:      func() (string, []byte, error) { return "CERTIFICATE", caDER, nil },
		files.kubeletCert: func() (string, []byte, error) { return "CERTIFICATE", der, nil },
		files.caKey: func() (string, []byte, error) {
			b, err := x509.MarshalECPrivateKey(caKey)
			return "EC PRIVATE KEY", b, err
		},
		files.kubeletKey: func() (string, []byte, error) {
			b, err := x509.MarshalECPrivateKey(key)
			return "EC PRIVATE KEY", b, err
		},
	} {
		blockType, data, err := block()
		if err == nil {
			err = writePEM(path, blockType, data)
		}
		if err != nil {
			return files, fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return files, nil
}

// KubeletClientCertificate returns the files of the apiserver's kubelet
// client certificate (user KubeletClientUser, signed by the client CA that
// delegating servers trust), to call such a server with a client
// certificate the way the apiserver does.
func (c *Cluster) KubeletClientCertificate() (certFile, keyFile string) {
	return c.certs.kubeletCert, c.certs.kubeletKey
}

// ClusterCA is the PEM of the cluster CA: the client CA, with which the
// controller-manager signs approved requests of the kubernetes.io signers
// (kubelet-serving among them).
func (c *Cluster) ClusterCA() ([]byte, error) {
	return os.ReadFile(c.certs.caCert)
}
