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
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

const fuzzKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: physical
  cluster:
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
users:
- name: syncer
  user:
    token: abc
contexts:
- name: physical
  context: {cluster: physical, user: syncer}
current-context: physical
`

// FuzzKubeconfig: whatever a Secret holds, parsing never panics, and a
// kubeconfig it accepts is self-contained: the client it configures runs no
// plugin and reads no local file (what would hand the manager's
// credentials or filesystem to whoever writes the Secret).
func FuzzKubeconfig(f *testing.F) {
	f.Add([]byte(fuzzKubeconfig))
	f.Add([]byte("{}"))
	f.Add([]byte("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://h'}}]\nusers: [{name: u, user: {tokenFile: /var/run/secrets/token}}]\n"))
	f.Add([]byte("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: 'https://h'}}]\nusers: [{name: u, user: {exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}}}]\n"))
	key := types.NamespacedName{Namespace: "kubeocean-system", Name: "fuzz"}
	f.Fuzz(func(t *testing.T, kubeconfig []byte) {
		config, err := restConfigFromKubeconfig(key, kubeconfig, Options{})
		if err != nil {
			return
		}
		switch {
		case config.ExecProvider != nil:
			t.Fatalf("accepted an exec plugin: %s", kubeconfig)
		case config.AuthProvider != nil:
			t.Fatalf("accepted an auth provider: %s", kubeconfig)
		case config.BearerTokenFile != "", config.CAFile != "", config.CertFile != "", config.KeyFile != "":
			t.Fatalf("accepted a local file (token %q, CA %q, cert %q, key %q): %s",
				config.BearerTokenFile, config.CAFile, config.CertFile, config.KeyFile, kubeconfig)
		}
	})
}
