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

package clusterbinding

import (
	"context"
	"fmt"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
)

// The binding pins the physical cluster it was first connected to
// (status.physicalClusterUID, the UID of its kube-system namespace). A
// kubeconfig that reaches another cluster — a Secret rotated with the wrong
// context — would otherwise read as "this cluster lends none of our nodes"
// and drain everything: the manager keeps the syncer as it is instead
// (Connected=False, reason PhysicalClusterChanged, a Warning event) and the
// syncer, which compares the same UID, freezes every node. Only the
// operator moves the pin, with AnnotationAcceptPhysicalCluster naming the
// new cluster's UID.

// pinInputs are what the identity verdict depends on besides the spec and
// the kubeconfig: a check is redone when the operator accepts a cluster.
// (Not the pin itself: the manager sets it from a passing check.)
func pinInputs(b *kubeoceanv1alpha1.ClusterBinding) string {
	return b.Annotations[kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster]
}

// identityFailure compares the identity of the cluster the kubeconfig
// reaches with the binding's pin; nil when the binding may (go on to) use
// it.
func identityFailure(b *kubeoceanv1alpha1.ClusterBinding, observed string) *connectivity.Failure {
	pinned := b.Status.PhysicalClusterUID
	if pinned == "" || observed == pinned || b.Annotations[kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster] == observed {
		return nil
	}
	ref := b.Spec.SecretRef
	return &connectivity.Failure{
		Reason: kubeoceanv1alpha1.ReasonPhysicalClusterChanged,
		Message: fmt.Sprintf("kubeconfig secret %s/%s reaches the physical cluster whose kube-system namespace has UID %s, "+
			"but the binding is bound to %s (status.physicalClusterUID); nothing is changed in either cluster. "+
			"Fix the Secret, or to move the binding to the new cluster: kubectl annotate clusterbinding %s %s=%s",
			ref.Namespace, ref.Name, observed, pinned, b.Name, kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster, observed),
		Permanent: true,
	}
}

// checkIdentity reads the identity of a cluster that passed the check and
// judges it; it returns the identity read and the failure, if any.
func (c *Controller) checkIdentity(ctx context.Context, b *kubeoceanv1alpha1.ClusterBinding) (string, *connectivity.Failure) {
	observed, failure := c.checker.Identity(ctx, &b.Spec)
	if failure != nil {
		return "", failure
	}
	return observed, identityFailure(b, observed)
}

// pinnedUID is the status.physicalClusterUID a connection record calls
// for: the identity read by a check that passed, else the current pin.
func pinnedUID(current string, record *connRecord) string {
	if record != nil && record.failure == nil && record.clusterUID != "" {
		return record.clusterUID
	}
	return current
}
