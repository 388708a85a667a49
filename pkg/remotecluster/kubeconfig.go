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

package remotecluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/flowcontrol"
)

// KubeconfigKey is the Secret data key holding the kubeconfig.
const KubeconfigKey = "kubeconfig"

// readKubeconfig returns the kubeconfig bytes of the Secret, or a ConfigError
// when the Secret or its key is missing. Other failures are transient.
func readKubeconfig(ctx context.Context, getSecret SecretGetter, key types.NamespacedName) ([]byte, error) {
	secret, err := getSecret(ctx, key.Namespace, key.Name)
	if apierrors.IsNotFound(err) {
		return nil, newConfigError(key, ReasonSecretNotFound, "secret not found", nil)
	}
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig secret %s: %w", key, err)
	}
	kubeconfig := secret.Data[KubeconfigKey]
	if len(kubeconfig) == 0 {
		detail := fmt.Sprintf("secret has no %q key (or it is empty)", KubeconfigKey)
		return nil, newConfigError(key, ReasonKubeconfigMissing, detail, nil)
	}
	return kubeconfig, nil
}

func hashKubeconfig(kubeconfig []byte) string {
	sum := sha256.Sum256(kubeconfig)
	return hex.EncodeToString(sum[:])
}

// restConfigFromKubeconfig parses the kubeconfig, checks it is self-contained
// and usable, and applies the per-cluster client options.
func restConfigFromKubeconfig(key types.NamespacedName, kubeconfig []byte, opts Options) (*rest.Config, error) {
	raw, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, newConfigError(key, ReasonKubeconfigInvalid, "kubeconfig cannot be parsed", err)
	}
	// Checked on the raw file because building the client config already
	// reads the files it names.
	if !opts.AllowExternalCredentials {
		if refs := externalReferences(raw); len(refs) > 0 {
			detail := fmt.Sprintf("kubeconfig must be self-contained but uses %s", strings.Join(refs, ", "))
			return nil, newConfigError(key, ReasonKubeconfigNotAllowed, detail, nil)
		}
	}
	config, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, newConfigError(key, ReasonKubeconfigInvalid, "kubeconfig cannot be parsed", err)
	}
	// Certificates are only decoded when a client is built; checking here
	// lets a corrupt certificate surface as the user's error, not a transient one.
	if _, err := rest.TLSConfigFor(config); err != nil {
		return nil, newConfigError(key, ReasonKubeconfigInvalid, "kubeconfig has unusable TLS settings", err)
	}
	applyClientOptions(config, opts)
	return config, nil
}

// externalReferences lists what the current context would take from outside
// the Secret. A kubeconfig from a Secret is used with the manager's own
// filesystem and binaries, so a path could send the manager's credentials to
// the remote server and an exec plugin would run an arbitrary command.
func externalReferences(raw *clientcmdapi.Config) []string {
	current := raw.Contexts[raw.CurrentContext]
	if current == nil {
		return nil // no usable context: reported when the config is built
	}
	var refs []string
	var cluster clientcmdapi.Cluster
	if c := raw.Clusters[current.Cluster]; c != nil {
		cluster = *c
	}
	var user clientcmdapi.AuthInfo
	if u := raw.AuthInfos[current.AuthInfo]; u != nil {
		user = *u
	}
	if user.Exec != nil {
		refs = append(refs, "an exec credential plugin")
	}
	if user.AuthProvider != nil {
		refs = append(refs, fmt.Sprintf("the %q auth provider", user.AuthProvider.Name))
	}
	files := []struct{ field, path string }{
		{"certificate-authority", cluster.CertificateAuthority},
		{"client-certificate", user.ClientCertificate},
		{"client-key", user.ClientKey},
		{"tokenFile", user.TokenFile},
	}
	for _, file := range files {
		if file.path != "" {
			refs = append(refs, fmt.Sprintf("a file path in %s (%s)", file.field, file.path))
		}
	}
	return refs
}

// applyClientOptions sets the per-cluster limits. The rate limiter is put on
// the config itself so every clientset built from it (kube, CRD, dynamic)
// shares one token bucket per cluster rather than one each.
func applyClientOptions(config *rest.Config, opts Options) {
	qps, burst := opts.QPS, opts.Burst
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst <= 0 {
		burst = rest.DefaultBurst
	}
	config.QPS, config.Burst = qps, burst
	if qps > 0 {
		config.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(qps, burst)
	}
	if opts.UserAgent != "" {
		config.UserAgent = opts.UserAgent
	}
	if opts.Timeout > 0 {
		config.Timeout = opts.Timeout
	}
}
