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
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// binder does the steps of one bind against the two clusters.
type binder struct {
	*bindOptions
	physical, virtual           *clients
	physicalApply, virtualApply *applier
	// verifyToken proves a new token authenticates as the binding's
	// identity (a function, so tests can stand in for the API server).
	verifyToken func(ctx context.Context, token string) error
	out         io.Writer
}

func (b *binder) bind(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding) error {
	// Before anything is written: a mount namespace belongs to one binding.
	if err := checkClaim(ctx, b.physical.kube, b.virtual.kube, b.mountNamespace, b.name); err != nil {
		return err
	}
	objects, err := b.physicalObjects()
	if err != nil {
		return err
	}
	if err := b.physicalApply.ensure(ctx, objects...); err != nil {
		return err
	}
	issued, err := b.ensureKubeconfig(ctx)
	if err != nil {
		return err
	}
	desired, err := toUnstructured(binding)
	if err != nil {
		return err
	}
	if err := b.virtualApply.ensure(ctx, desired); err != nil {
		return err
	}
	if b.policy {
		policy, err := toUnstructured(b.leasingPolicy(binding))
		if err != nil {
			return err
		}
		if err := b.physicalApply.ensure(ctx, policy); err != nil {
			return err
		}
	}
	if b.dryRun {
		return nil
	}
	if b.wait > 0 {
		if err := waitReady(ctx, b.virtual, b.name, b.wait, b.out); err != nil {
			if issued != nil && b.rotateToken {
				return fmt.Errorf("%w; the previous credentials were not revoked: once the binding is Ready, run bind --rotate-token again", err)
			}
			return err
		}
	}
	return b.settleCredentials(ctx, issued)
}

// settleCredentials revokes, on a rotation, every credential of the mount
// namespace but the one just issued; otherwise it names those left.
func (b *binder) settleCredentials(ctx context.Context, issued *credential) error {
	if issued == nil {
		return nil
	}
	if !b.rotateToken {
		all, err := credentials(ctx, b.physical.kube, b.mountNamespace)
		if err != nil {
			return err
		}
		var others []string
		for _, c := range all {
			if c.Name != issued.secret.Name {
				others = append(others, c.Name)
			}
		}
		if len(others) > 0 {
			fmt.Fprintf(b.out, "physical cluster: earlier credentials in %s stay valid until they expire: %s (--rotate-token revokes them)\n",
				b.mountNamespace, strings.Join(others, ", "))
		}
		return nil
	}
	revoked, err := revokeCredentials(ctx, b.physical.kube, b.mountNamespace, issued.secret.Name)
	if err != nil {
		return err
	}
	if len(revoked) == 0 {
		fmt.Fprintf(b.out, "physical cluster: no earlier credential to revoke in %s\n", b.mountNamespace)
		return nil
	}
	fmt.Fprintf(b.out, "physical cluster: revoked (credential Secrets deleted, their tokens no longer authenticate): %s/%s\n",
		b.mountNamespace, strings.Join(revoked, ", "+b.mountNamespace+"/"))
	return nil
}

// ensureKubeconfig creates the kubeconfig Secret with a new credential
// when it is missing, or rewrites it with one on --rotate-token, and
// returns the credential it issued (nil when it kept the Secret).
func (b *binder) ensureKubeconfig(ctx context.Context) (*credential, error) {
	name := b.name + "-kubeconfig"
	secrets := b.virtual.kube.CoreV1().Secrets(systemNamespace)
	head := fmt.Sprintf("virtual cluster: Secret %s/%s", systemNamespace, name)
	existing, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		existing = nil
	case err != nil:
		return nil, fmt.Errorf("%s: %w", head, err)
	}
	if existing != nil && !b.rotateToken {
		fmt.Fprintf(b.out, "%s %s (its credential is kept; --rotate-token replaces it)\n", head, outcomeUnchanged)
		return nil, nil
	}
	if b.dryRun {
		return nil, b.printIssue(ctx, head, existing)
	}
	issued, err := issueCredential(ctx, b.physical.kube, b.mountNamespace, b.tokenDuration)
	if err != nil {
		return nil, err
	}
	printCredential(b.out, issued, b.mountNamespace)
	if err := b.writeKubeconfig(ctx, head, name, existing, issued); err != nil {
		// Nothing uses the new credential: revoke it rather than leave it.
		_ = deleteCredential(ctx, b.physical.kube, issued.secret)
		return nil, err
	}
	return issued, nil
}

func (b *binder) writeKubeconfig(ctx context.Context, head, name string, existing *corev1.Secret, issued *credential) error {
	if err := b.verifyToken(ctx, issued.token); err != nil {
		return err
	}
	kubeconfig, err := b.kubeconfig(b.physical.config, issued.token)
	if err != nil {
		return err
	}
	secrets := b.virtual.kube.CoreV1().Secrets(systemNamespace)
	if existing == nil {
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: name},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"kubeconfig": kubeconfig},
		}, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return fmt.Errorf("%s: %w", head, err)
		}
		fmt.Fprintf(b.out, "%s %s\n", head, outcomeCreated)
		return nil
	}
	// Only the key bind owns; an update, so a concurrent change fails
	// on the resourceVersion read.
	updated := existing.DeepCopy()
	if updated.Data == nil {
		updated.Data = map[string][]byte{}
	}
	updated.Data["kubeconfig"] = kubeconfig
	if _, err := secrets.Update(ctx, updated, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return fmt.Errorf("%s: %w", head, err)
	}
	fmt.Fprintf(b.out, "%s rewritten with the new credential\n", head)
	return nil
}

// printIssue prints, in a dry run, the credential bind would issue and
// the kubeconfig Secret it would write.
func (b *binder) printIssue(ctx context.Context, head string, existing *corev1.Secret) error {
	fmt.Fprintf(b.out, "physical cluster: a credential Secret %s/%s… and a token of %s/%s bound to it, valid %v, would be created\n",
		b.mountNamespace, credentialPrefix, b.mountNamespace, syncerServiceAccount, b.tokenDuration)
	if existing != nil {
		fmt.Fprintf(b.out, "%s would be rewritten with the new credential\n", head)
	} else {
		secret, err := toUnstructured(&corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: b.name + "-kubeconfig"},
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"kubeconfig": nil},
		})
		if err != nil {
			return err
		}
		if err := b.virtualApply.printDiff(head+" "+outcomeWouldCreate, secret, nil); err != nil {
			return err
		}
	}
	if !b.rotateToken {
		return nil
	}
	all, err := credentials(ctx, b.physical.kube, b.mountNamespace)
	if err != nil {
		return err
	}
	for _, c := range all {
		fmt.Fprintf(b.out, "physical cluster: credential %s/%s would be revoked once the binding is Ready with the new one\n", b.mountNamespace, c.Name)
	}
	return nil
}
