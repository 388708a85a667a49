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
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// serviceAccountTokenSeconds outlives any test; tokens are bound to the
// ServiceAccount, so deleting it revokes them.
const serviceAccountTokenSeconds = 24 * 60 * 60

// ServiceAccountToken returns a token for the ServiceAccount namespace/name
// from the TokenRequest API, creating the ServiceAccount (not the namespace)
// if it does not exist yet. What the token may do is up to RBAC, which is how
// tests check the shipped roles.
func (c *Cluster) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	accounts := c.Clientset().CoreV1().ServiceAccounts(namespace)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := accounts.Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating ServiceAccount %s/%s: %w", namespace, name, err)
	}
	expiration := int64(serviceAccountTokenSeconds)
	request := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration},
	}
	token, err := accounts.CreateToken(ctx, name, request, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return token.Status.Token, nil
}

// KubeconfigForServiceAccount is ServiceAccountToken rendered as a kubeconfig.
func (c *Cluster) KubeconfigForServiceAccount(ctx context.Context, namespace, name string) ([]byte, error) {
	token, err := c.ServiceAccountToken(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return c.KubeconfigForToken(token), nil
}
