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

package syncer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// identityNamespace is the namespace whose UID identifies a cluster: every
// cluster has it, and it is never recreated.
const identityNamespace = "kube-system"

// physicalClusterUID reads the identity of the cluster the physical
// clients reach, which the node controller compares with the one the
// binding is bound to (status.physicalClusterUID). A credential without
// the grant (an older RBAC) leaves the check off, with a log line; any other
// error fails the start, which the manager retries.
func physicalClusterUID(ctx context.Context, kube kubernetes.Interface) (string, error) {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, identityNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		klog.FromContext(ctx).Info("Cannot read the physical cluster's identity; the check that the kubeconfig still reaches the bound cluster is off",
			"namespace", identityNamespace, "err", err)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading the physical cluster's identity (namespace %s): %w", identityNamespace, err)
	}
	return string(ns.UID), nil
}

// refuseOtherCluster stops a start whose kubeconfig reaches another
// physical cluster than the one the binding is bound to: run against it,
// the top-down controllers would report every physical pod lost and create
// the binding's pods there. Nothing runs until the Secret is fixed or the
// operator accepts the cluster (kubeocean.io/accept-physical-cluster); the
// manager restarts the syncer with backoff meanwhile. A syncer that
// already runs when the pin moves keeps running, and its node controller
// freezes every node.
func refuseOtherCluster(binding *kubeoceanv1alpha1.ClusterBinding, observed string) error {
	pinned := binding.Status.PhysicalClusterUID
	if pinned == "" || observed == "" || observed == pinned || binding.Annotations[kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster] == observed {
		return nil
	}
	return fmt.Errorf("%s: the kubeconfig of ClusterBinding %s reaches the physical cluster whose kube-system namespace has UID %s, "+
		"but the binding is bound to %s; not starting. Fix the Secret, or annotate the binding %s=%s",
		kubeoceanv1alpha1.ReasonPhysicalClusterChanged, binding.Name, observed, pinned, kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster, observed)
}
