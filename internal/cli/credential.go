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

package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// A binding's physical credential is a token of the ServiceAccount
// kubeocean-syncer of its mount namespace, bound to a Secret of its own in
// that namespace: deleting the Secret revokes the token (the API server
// refuses a bound token whose object is gone), so a rotation can end the
// old credential at once instead of waiting for it to expire. The Secrets
// carry kubeoceanv1alpha1.LabelCredential and are named credentialPrefix
// plus a random suffix.
const credentialPrefix = syncerServiceAccount + "-credential-"

// credential is a token issued for a binding and the Secret it is bound to.
type credential struct {
	secret  *corev1.Secret
	token   string
	expires time.Time
}

// issueCredential creates a credential Secret in the mount namespace and a
// token bound to it.
func issueCredential(ctx context.Context, kube kubernetes.Interface, namespace string, lifetime time.Duration) (*credential, error) {
	secret, err := kube.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace,
			// A suffix of our own rather than generateName, so each try
			// names its Secret before creating it.
			Name:        credentialPrefix + utilrand.String(5),
			Labels:      map[string]string{kubeoceanv1alpha1.LabelCredential: syncerServiceAccount},
			Annotations: map[string]string{"kubeocean.io/description": "Deleting this Secret revokes the kubeocean-syncer token bound to it."},
		},
		Type: corev1.SecretTypeOpaque,
	}, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil {
		return nil, fmt.Errorf("physical cluster: creating the credential Secret in %s: %w", namespace, err)
	}
	seconds := int64(lifetime.Seconds())
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, syncerServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds, BoundObjectRef: &authenticationv1.BoundObjectReference{
			Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID}},
	}, metav1.CreateOptions{})
	if err != nil {
		_ = deleteCredential(ctx, kube, secret)
		return nil, fmt.Errorf("physical cluster: a token for %s/%s: %w", namespace, syncerServiceAccount, err)
	}
	return &credential{secret: secret, token: tr.Status.Token, expires: tr.Status.ExpirationTimestamp.Time}, nil
}

// isCredential says whether s is a Secret bind bound a credential to: a
// copy of a tenant's Secret (which the syncer labels managed-by) never is,
// whatever its name and labels say.
func isCredential(s *corev1.Secret) bool {
	return s.Labels[kubeoceanv1alpha1.LabelCredential] == syncerServiceAccount && strings.HasPrefix(s.Name, credentialPrefix) &&
		s.Labels[kubeoceanv1alpha1.LabelManagedBy] == "" && s.Type == corev1.SecretTypeOpaque
}

// credentials lists the credential Secrets of the mount namespace, by name.
func credentials(ctx context.Context, kube kubernetes.Interface, namespace string) ([]corev1.Secret, error) {
	list, err := kube.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelCredential + "=" + syncerServiceAccount})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("physical cluster: listing the credentials in %s: %w", namespace, err)
	}
	var out []corev1.Secret
	for _, s := range list.Items {
		if isCredential(&s) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b corev1.Secret) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// revokeCredentials deletes every credential Secret of the mount namespace
// but keep, which revokes their tokens, and returns their names.
func revokeCredentials(ctx context.Context, kube kubernetes.Interface, namespace, keep string) ([]string, error) {
	all, err := credentials(ctx, kube, namespace)
	if err != nil {
		return nil, err
	}
	var revoked []string
	for i := range all {
		if all[i].Name == keep {
			continue
		}
		if err := deleteCredential(ctx, kube, &all[i]); err != nil {
			return revoked, fmt.Errorf("physical cluster: revoking the credential %s/%s: %w", namespace, all[i].Name, err)
		}
		revoked = append(revoked, all[i].Name)
	}
	return revoked, nil
}

// deleteCredential deletes the very Secret read, not one recreated since.
func deleteCredential(ctx context.Context, kube kubernetes.Interface, s *corev1.Secret) error {
	err := kube.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// verifyToken proves that the new token authenticates as the binding's
// ServiceAccount before anything relies on it.
func verifyToken(ctx context.Context, config *rest.Config, token, namespace string) error {
	config = rest.AnonymousClientConfig(config)
	config.BearerToken = token
	kube, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("physical cluster: the new token does not authenticate: %w", err)
	}
	want := "system:serviceaccount:" + namespace + ":" + syncerServiceAccount
	if got := review.Status.UserInfo.Username; got != want {
		return fmt.Errorf("physical cluster: the new token authenticates as %q, not %q", got, want)
	}
	return nil
}

// kubeconfig is self-contained, as the manager requires: the server, its
// CA inline and the token.
func (o *bindOptions) kubeconfig(physical *rest.Config, token string) ([]byte, error) {
	server := o.physicalServer
	if server == "" {
		server = physical.Host
	}
	ca := physical.CAData
	if len(ca) == 0 && physical.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(physical.CAFile); err != nil {
			return nil, fmt.Errorf("the physical cluster's CA: %w", err)
		}
	}
	config := clientcmdapi.NewConfig()
	config.Clusters[o.clusterID] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca,
		InsecureSkipTLSVerify: physical.Insecure, TLSServerName: physical.ServerName}
	config.AuthInfos[syncerServiceAccount] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts[o.clusterID] = &clientcmdapi.Context{Cluster: o.clusterID, AuthInfo: syncerServiceAccount}
	config.CurrentContext = o.clusterID
	return clientcmd.Write(*config)
}

func printCredential(out io.Writer, c *credential, namespace string) {
	fmt.Fprintf(out, "physical cluster: credential Secret %s/%s created, with a token for %s/%s bound to it, valid until %s\n",
		namespace, c.secret.Name, namespace, syncerServiceAccount, c.expires.UTC().Format(time.RFC3339))
}
