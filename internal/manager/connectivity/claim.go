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

package connectivity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Claim is who a mount namespace belongs to: one binding of one virtual
// cluster. It is recorded in the ConfigMap
// kubeoceanv1alpha1.MountNamespaceClaim of the mount namespace, which only
// the binding's own identity (and the physical administrator) can write.
type Claim struct {
	// VirtualCluster is the UID of the virtual cluster's kube-system
	// namespace.
	VirtualCluster string
	Binding        string
	BindingUID     string
	ClusterID      string
}

func (c Claim) data() map[string]string {
	return map[string]string{
		kubeoceanv1alpha1.ClaimKeyVirtualCluster: c.VirtualCluster,
		kubeoceanv1alpha1.ClaimKeyBinding:        c.Binding,
		kubeoceanv1alpha1.ClaimKeyBindingUID:     c.BindingUID,
		kubeoceanv1alpha1.ClaimKeyClusterID:      c.ClusterID,
	}
}

// sameOwner says whether recorded names the same binding of the same
// virtual cluster as c: a binding recreated under its name (a new UID)
// takes its namespace over, as it takes over its predecessor's objects.
func (c Claim) sameOwner(recorded map[string]string) bool {
	return recorded[kubeoceanv1alpha1.ClaimKeyVirtualCluster] == c.VirtualCluster &&
		recorded[kubeoceanv1alpha1.ClaimKeyBinding] == c.Binding
}

// ClaimMountNamespace records that the binding's mount namespace belongs to
// claim, or fails with ReasonMountNamespaceTaken when it belongs to
// another binding: two bindings in one namespace would run pods under
// each other's names and share one identity. The failure is not
// permanent: it ends when the other binding's unbinding releases the
// namespace. A namespace that does not exist yet, or a credential that
// may not read the claim (an older RBAC), leaves the check off with a log
// line; it is done again at the next check. Call it after Check passed.
func (c *Checker) ClaimMountNamespace(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec, claim Claim) *Failure {
	ref := spec.SecretRef
	entry, err := c.cache.Get(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return &Failure{Reason: kubeoceanv1alpha1.ReasonKubeconfigSecretUnreadable, Message: err.Error(), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	recorded, err := claimMountNamespace(ctx, entry.Clients, spec.MountNamespace, claim)
	logger := klog.FromContext(ctx)
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		logger.Info("Cannot claim the mount namespace yet; checking again later", "mountNamespace", spec.MountNamespace, "err", err)
		return nil
	case err != nil:
		return &Failure{
			Reason:  kubeoceanv1alpha1.ReasonUnreachable,
			Message: fmt.Sprintf("claiming mount namespace %s of the physical cluster at %s: %v", spec.MountNamespace, entry.Config.Host, err),
			Err:     err,
		}
	case !claim.sameOwner(recorded):
		return &Failure{
			Reason: kubeoceanv1alpha1.ReasonMountNamespaceTaken,
			Message: fmt.Sprintf("mount namespace %s of the physical cluster at %s belongs to ClusterBinding %s (UID %s, clusterID %s) of the virtual cluster %s, "+
				"as ConfigMap %s/%s records; nothing is run for this binding. Name another mountNamespace, "+
				"or, if that binding is gone for good, delete the ConfigMap",
				spec.MountNamespace, entry.Config.Host, recorded[kubeoceanv1alpha1.ClaimKeyBinding], recorded[kubeoceanv1alpha1.ClaimKeyBindingUID],
				recorded[kubeoceanv1alpha1.ClaimKeyClusterID], recorded[kubeoceanv1alpha1.ClaimKeyVirtualCluster],
				spec.MountNamespace, kubeoceanv1alpha1.MountNamespaceClaim),
		}
	}
	return nil
}

// claimMountNamespace creates the claim, or takes it over for a recreated
// binding of the same name, and returns what it records.
func claimMountNamespace(ctx context.Context, kube kubernetes.Interface, namespace string, claim Claim) (map[string]string, error) {
	configMaps := kube.CoreV1().ConfigMaps(namespace)
	existing, err := configMaps.Get(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		created, err := configMaps.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: kubeoceanv1alpha1.MountNamespaceClaim},
			Data:       claim.data(),
		}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Another manager claimed it a moment ago.
			existing, err = configMaps.Get(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
		} else if err == nil {
			klog.FromContext(ctx).Info("Claimed the mount namespace", "mountNamespace", namespace)
			return created.Data, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if !claim.sameOwner(existing.Data) || existing.Data[kubeoceanv1alpha1.ClaimKeyBindingUID] == claim.BindingUID {
		return existing.Data, nil
	}
	// The binding was recreated: the claim follows it. The update is
	// conditional on the version read, so two managers cannot both win.
	previous := existing.Data[kubeoceanv1alpha1.ClaimKeyBindingUID]
	existing.Data = claim.data()
	updated, err := configMaps.Update(ctx, existing, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Took the mount namespace over from the binding's predecessor", "mountNamespace", namespace, "predecessorUID", previous)
	return updated.Data, nil
}
