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

package remotecluster_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/kubeocean/kubeocean/pkg/remotecluster"
)

// kubeconfig of a physical cluster, as a ClusterBinding's Secret holds it.
func kubeconfig(server string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters:
- name: physical
  cluster:
    server: ` + server + `
users:
- name: syncer
  user:
    token: secret-token
contexts:
- name: physical
  context: {cluster: physical, user: syncer}
current-context: physical
`)
}

// A cache of clients to remote clusters, keyed by the kubeconfig Secret:
// built once, reused while the Secret is unchanged, rebuilt when it
// changes. The build function here returns the server address; real
// callers build clientsets (remotecluster.NewKubeClientset).
func ExampleCache() {
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: "worker-1-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig("https://worker-1.example:6443")},
	}
	virtual := fake.NewClientset(secret)
	builds := 0
	cache := remotecluster.NewCache(remotecluster.SecretsFromClient(virtual.CoreV1()),
		func(config *rest.Config) (string, error) {
			builds++
			return config.Host, nil
		},
		remotecluster.Options{QPS: 50, Burst: 100, UserAgent: "example/worker-1"})

	first, err := cache.Get(ctx, "kubeocean-system", "worker-1-kubeconfig")
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Clients, first.Config.QPS, first.Config.UserAgent)
	again, _ := cache.Get(ctx, "kubeocean-system", "worker-1-kubeconfig")
	fmt.Println("reused:", again == first, "builds:", builds)

	// The kubeconfig changes: the next Get builds new clients.
	secret.Data["kubeconfig"] = kubeconfig("https://worker-1b.example:6443")
	if _, err := virtual.CoreV1().Secrets(secret.Namespace).Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}
	changed, _ := cache.Get(ctx, "kubeocean-system", "worker-1-kubeconfig")
	fmt.Println(changed.Clients, "builds:", builds)
	// Output:
	// https://worker-1.example:6443 50 example/worker-1
	// reused: true builds: 1
	// https://worker-1b.example:6443 builds: 2
}

// Errors the user must fix (a missing Secret, a broken kubeconfig) are
// ConfigErrors, with a reason fit for a condition; retrying cannot help.
func ExampleConfigError() {
	cache := remotecluster.NewCache(remotecluster.SecretsFromClient(fake.NewClientset().CoreV1()),
		remotecluster.NewKubeClientset, remotecluster.Options{})
	_, err := cache.Get(context.Background(), "kubeocean-system", "missing")
	var configErr *remotecluster.ConfigError
	if errors.As(err, &configErr) {
		fmt.Println(configErr.Reason, remotecluster.IsConfigError(err))
	}
	// Output: KubeconfigSecretNotFound true
}
