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
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// AdminUser is the user name of the admin token; it is in system:masters.
	AdminUser = "kubeocean-test-admin"

	// serviceAccountIssuer is what in-cluster clients would expect.
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

	// Client-side rate limits for the admin config: client-go's defaults
	// (5 QPS) make test setups crawl; tests that measure throughput set their own.
	adminQPS   = 100
	adminBurst = 200
)

// credentialFiles are the files the components share, all in the cluster folder.
type credentialFiles struct {
	serviceAccountKey    string // RSA private key, PEM
	serviceAccountPubKey string // its public half, PEM
	tokenAuthFile        string // static token CSV for the admin
	adminToken           string
}

// writeCredentials generates a fresh service-account signing key and admin
// token for one cluster, so that no two clusters accept each other's tokens.
func writeCredentials(dir string) (credentialFiles, error) {
	files := credentialFiles{
		serviceAccountKey:    filepath.Join(dir, "sa.key"),
		serviceAccountPubKey: filepath.Join(dir, "sa.pub"),
		tokenAuthFile:        filepath.Join(dir, "tokens.csv"),
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return files, fmt.Errorf("generating service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return files, err
	}
	if err := writePEM(files.serviceAccountKey, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key)); err != nil {
		return files, err
	}
	if err := writePEM(files.serviceAccountPubKey, "PUBLIC KEY", pub); err != nil {
		return files, err
	}

	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return files, err
	}
	files.adminToken = hex.EncodeToString(token)
	// Format: token,user,uid,"group1,group2".
	line := fmt.Sprintf("%s,%s,%s,\"system:masters\"\n", files.adminToken, AdminUser, AdminUser)
	if err := os.WriteFile(files.tokenAuthFile, []byte(line), 0o600); err != nil {
		return files, err
	}
	return files, nil
}

func writePEM(path, blockType string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600)
}

// servingCA reads the certificate bundle the apiserver generated in its
// cert-dir (the serving certificate followed by the CA that signed it) and
// returns it for use as a CA bundle, or nil when the serving certificate does
// not cover 127.0.0.1 and clients have to skip verification instead. It
// returns an error while the file is missing or still being written.
func servingCA(certFile string) ([]byte, error) {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no certificate in " + certFile + " yet")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	if leaf.VerifyHostname("127.0.0.1") != nil {
		return nil, nil
	}
	return data, nil
}

// restConfig builds a client config for the cluster with the given token.
func restConfig(host string, caData []byte, token string) *rest.Config {
	cfg := &rest.Config{
		Host:        host,
		BearerToken: token,
		QPS:         adminQPS,
		Burst:       adminBurst,
	}
	if caData != nil {
		cfg.CAData = caData
	} else {
		cfg.Insecure = true
	}
	return cfg
}

// kubeconfig renders a kubeconfig with one context named after the cluster.
func kubeconfig(name, host string, caData []byte, user, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   host,
		CertificateAuthorityData: caData,
		InsecureSkipTLSVerify:    caData == nil,
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: user}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}
