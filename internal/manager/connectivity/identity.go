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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// IdentityNamespace is the namespace whose UID identifies a cluster: every
// cluster has it and none recreates it, so a kubeconfig re-pointed at
// another cluster shows as another UID.
const IdentityNamespace = "kube-system"

// Identity reads the UID of the physical cluster's IdentityNamespace
// through the binding's kubeconfig. Call it after Check passed.
func (c *Checker) Identity(ctx context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec) (string, *Failure) {
	ref := spec.SecretRef
	entry, err := c.cache.Get(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return "", &Failure{Reason: kubeoceanv1alpha1.ReasonKubeconfigSecretUnreadable, Message: err.Error(), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ns, err := entry.Clients.CoreV1().Namespaces().Get(ctx, IdentityNamespace, metav1.GetOptions{})
	if err != nil {
		return "", &Failure{
			Reason: kubeoceanv1alpha1.ReasonPhysicalClusterIdentityUnreadable,
			Message: fmt.Sprintf("could not read namespace %s of the physical cluster at %s (kubeconfig secret %s/%s), which identifies it: %v",
				IdentityNamespace, entry.Config.Host, ref.Namespace, ref.Name, err),
			Err: err,
		}
	}
	return string(ns.UID), nil
}
