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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
)

// SecretGetter fetches a Secret. It returns a NotFound API error when the
// Secret does not exist, like both a lister and a client do.
type SecretGetter func(ctx context.Context, namespace, name string) (*corev1.Secret, error)

// SecretsFromLister reads kubeconfig Secrets from an informer cache. Use it
// when an informer on the Secrets already runs (ideally one restricted to the
// namespaces or labels of kubeconfig Secrets, so it does not hold every
// Secret of the cluster).
func SecretsFromLister(lister corev1listers.SecretLister) SecretGetter {
	return func(_ context.Context, namespace, name string) (*corev1.Secret, error) {
		return lister.Secrets(namespace).Get(name)
	}
}

// SecretsFromClient reads kubeconfig Secrets straight from the API server,
// which avoids caching every Secret when only a few are kubeconfigs.
func SecretsFromClient(client corev1client.SecretsGetter) SecretGetter {
	return func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
		return client.Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	}
}
