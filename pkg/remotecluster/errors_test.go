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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2/ktesting"
)

func newSecretLister(t *testing.T, secrets ...*corev1.Secret) corev1listers.SecretLister {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, secret := range secrets {
		if err := indexer.Add(secret); err != nil {
			t.Fatal(err)
		}
	}
	return corev1listers.NewSecretLister(indexer)
}

func TestCacheConfigErrors(t *testing.T) {
	const server = "https://worker.example:6443"
	withKubeconfig := func(edit func(*clientcmdapi.Config)) func(*testing.T) []*corev1.Secret {
		return func(t *testing.T) []*corev1.Secret {
			return []*corev1.Secret{kubeconfigSecret(map[string][]byte{KubeconfigKey: kubeconfigFor(t, server, edit)})}
		}
	}
	tests := []struct {
		name        string
		secrets     func(*testing.T) []*corev1.Secret
		wantReason  ConfigErrorReason
		wantMessage string
	}{
		{
			name:        "secret missing",
			secrets:     func(*testing.T) []*corev1.Secret { return nil },
			wantReason:  ReasonSecretNotFound,
			wantMessage: "secret not found",
		},
		{
			name: "kubeconfig key missing",
			secrets: func(*testing.T) []*corev1.Secret {
				return []*corev1.Secret{kubeconfigSecret(map[string][]byte{"config": []byte("x")})}
			},
			wantReason:  ReasonKubeconfigMissing,
			wantMessage: `no "kubeconfig" key`,
		},
		{
			name: "kubeconfig key empty",
			secrets: func(*testing.T) []*corev1.Secret {
				return []*corev1.Secret{kubeconfigSecret(map[string][]byte{KubeconfigKey: nil})}
			},
			wantReason:  ReasonKubeconfigMissing,
			wantMessage: `no "kubeconfig" key`,
		},
		{
			name: "kubeconfig not YAML",
			secrets: func(*testing.T) []*corev1.Secret {
				return []*corev1.Secret{kubeconfigSecret(map[string][]byte{KubeconfigKey: []byte("clusters: [unclosed")})}
			},
			wantReason:  ReasonKubeconfigInvalid,
			wantMessage: "cannot be parsed",
		},
		{
			name:        "current context missing",
			secrets:     withKubeconfig(func(c *clientcmdapi.Config) { c.CurrentContext = "" }),
			wantReason:  ReasonKubeconfigInvalid,
			wantMessage: "cannot be parsed",
		},
		{
			name:        "server missing",
			secrets:     withKubeconfig(func(c *clientcmdapi.Config) { c.Clusters["worker"].Server = "" }),
			wantReason:  ReasonKubeconfigInvalid,
			wantMessage: "cannot be parsed",
		},
		{
			name: "corrupt CA data",
			secrets: withKubeconfig(func(c *clientcmdapi.Config) {
				c.Clusters["worker"].InsecureSkipTLSVerify = false
				c.Clusters["worker"].CertificateAuthorityData = []byte("not a certificate")
			}),
			wantReason:  ReasonKubeconfigInvalid,
			wantMessage: "unusable TLS settings",
		},
		{
			name: "exec plugin",
			secrets: withKubeconfig(func(c *clientcmdapi.Config) {
				c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
					Command: "get-token", APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
				}}
			}),
			wantReason:  ReasonKubeconfigNotAllowed,
			wantMessage: "exec credential plugin",
		},
		{
			name: "token file",
			secrets: withKubeconfig(func(c *clientcmdapi.Config) {
				c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
			}),
			wantReason:  ReasonKubeconfigNotAllowed,
			wantMessage: "file path in tokenFile (/var/run/secrets/kubernetes.io/serviceaccount/token)",
		},
		{
			name: "CA file",
			secrets: withKubeconfig(func(c *clientcmdapi.Config) {
				c.Clusters["worker"].InsecureSkipTLSVerify = false
				c.Clusters["worker"].CertificateAuthority = "/etc/ca.crt"
			}),
			wantReason:  ReasonKubeconfigNotAllowed,
			wantMessage: "file path in certificate-authority",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			builder := &countingBuilder{}
			cache := NewCache(SecretsFromLister(newSecretLister(t, tt.secrets(t)...)), builder.build, Options{})
			_, ctx := ktesting.NewTestContext(t)

			_, err := cache.Get(ctx, testNamespace, testSecret)

			var configErr *ConfigError
			if !errors.As(err, &configErr) || !IsConfigError(err) {
				t.Fatalf("error %v is not a ConfigError", err)
			}
			if configErr.Reason != tt.wantReason {
				t.Errorf("reason = %s, want %s", configErr.Reason, tt.wantReason)
			}
			if configErr.Secret != (types.NamespacedName{Namespace: testNamespace, Name: testSecret}) {
				t.Errorf("secret = %s", configErr.Secret)
			}
			msg := err.Error()
			if !strings.Contains(msg, "clusters/worker-1") || !strings.Contains(msg, tt.wantMessage) {
				t.Errorf("message %q should name the secret and contain %q", msg, tt.wantMessage)
			}
			if got := builder.builds.Load(); got != 0 {
				t.Errorf("builds = %d, want 0", got)
			}
		})
	}
}

func TestCacheAllowExternalCredentials(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("file-token"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := kubeconfigFor(t, "https://worker.example", func(c *clientcmdapi.Config) {
		c.AuthInfos["admin"] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	})
	lister := newSecretLister(t, kubeconfigSecret(map[string][]byte{KubeconfigKey: kubeconfig}))
	builder := &countingBuilder{}
	cache := NewCache(SecretsFromLister(lister), builder.build, Options{AllowExternalCredentials: true})
	_, ctx := ktesting.NewTestContext(t)

	entry, err := cache.Get(ctx, testNamespace, testSecret)

	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if entry.Config.BearerTokenFile != tokenFile {
		t.Errorf("BearerTokenFile = %q", entry.Config.BearerTokenFile)
	}
}

func TestCacheConfigErrorDropsCachedEntry(t *testing.T) {
	cache, builder, client := newTestCache(t, Options{})
	mustGet(t, cache)
	good := kubeconfigFor(t, "https://worker-1.example:6443", nil)

	updateKubeconfig(t, client, []byte("clusters: [unclosed"))
	_, ctx := ktesting.NewTestContext(t)
	if _, err := cache.Get(ctx, testNamespace, testSecret); !IsConfigError(err) {
		t.Fatalf("Get with a broken kubeconfig: %v, want a ConfigError", err)
	}
	updateKubeconfig(t, client, good)
	mustGet(t, cache)

	if got := builder.builds.Load(); got != 2 {
		t.Errorf("builds = %d, want 2 (the entry must not survive a broken kubeconfig)", got)
	}
}

func TestCacheSecretReadErrorIsTransient(t *testing.T) {
	apiErr := apierrors.NewInternalError(errors.New("etcd unavailable"))
	getSecret := func(context.Context, string, string) (*corev1.Secret, error) { return nil, apiErr }
	builder := &countingBuilder{}
	cache := NewCache(getSecret, builder.build, Options{})
	_, ctx := ktesting.NewTestContext(t)

	_, err := cache.Get(ctx, testNamespace, testSecret)

	if IsConfigError(err) {
		t.Errorf("error %v classified as a config error", err)
	}
	if !errors.Is(err, apiErr) {
		t.Errorf("error %v does not wrap the API error", err)
	}
}

func TestIsConfigError(t *testing.T) {
	configErr := newConfigError(types.NamespacedName{Namespace: "a", Name: "b"}, ReasonSecretNotFound, "secret not found", nil)
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "plain error", err: errors.New("timeout"), want: false},
		{name: "config error", err: configErr, want: true},
		{name: "wrapped config error", err: fmt.Errorf("reconciling: %w", configErr), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsConfigError(tt.err); got != tt.want {
				t.Errorf("IsConfigError(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestConfigErrorUnwrapsCause(t *testing.T) {
	cause := errors.New("yaml: line 1")
	err := newConfigError(types.NamespacedName{Namespace: "a", Name: "b"}, ReasonKubeconfigInvalid, "kubeconfig cannot be parsed", cause)

	if !errors.Is(err, cause) {
		t.Error("ConfigError does not unwrap to its cause")
	}
	if want := "kubeconfig secret a/b: kubeconfig cannot be parsed: yaml: line 1"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}
