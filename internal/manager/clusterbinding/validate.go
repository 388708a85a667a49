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
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubevalidation "github.com/kubeocean/kubeocean/internal/validation"
)

// invalidSpec is why a binding cannot be served as it is.
type invalidSpec struct {
	reason, message string
}

// validate checks the spec again (the schema may be older than the object)
// and what the schema cannot: the binding's name ends up in label values,
// and a clusterID belongs to the binding that claimed it first.
func (c *Controller) validate(b *kubeoceanv1alpha1.ClusterBinding) *invalidSpec {
	if errs := kubevalidation.ClusterBindingSpec(&b.Spec); len(errs) > 0 {
		return &invalidSpec{reason: kubeoceanv1alpha1.ReasonInvalidSpec, message: "The spec is invalid: " + errs.ToAggregate().Error()}
	}
	if len(b.Name) > validation.LabelValueMaxLength {
		return &invalidSpec{reason: kubeoceanv1alpha1.ReasonInvalidName, message: fmt.Sprintf(
			"The name is %d characters long; it must be at most %d, since the syncer puts it in label values (kubeocean.io/cluster-binding). Recreate the binding with a shorter name.",
			len(b.Name), validation.LabelValueMaxLength)}
	}
	peers, err := c.index.ByIndex(clusterIDIndex, b.Spec.ClusterID)
	if err != nil {
		return nil
	}
	if owner := clusterIDOwner(b, peers); owner != nil {
		return &invalidSpec{reason: kubeoceanv1alpha1.ReasonDuplicateClusterID, message: fmt.Sprintf(
			"clusterID %q is already used by ClusterBinding %s, which was created first; clusterIDs must be unique and are immutable, so recreate this binding with another clusterID (or delete %s).",
			b.Spec.ClusterID, owner.Name, owner.Name)}
	}
	return nil
}

// clusterIDOwner returns the binding among peers that claimed b's clusterID
// before b did, if any. A binding being deleted keeps its claim until it is
// gone, while its syncer cleans up what carries the clusterID.
func clusterIDOwner(b *kubeoceanv1alpha1.ClusterBinding, peers []any) *kubeoceanv1alpha1.ClusterBinding {
	var owner *kubeoceanv1alpha1.ClusterBinding
	for _, obj := range peers {
		peer, ok := obj.(*kubeoceanv1alpha1.ClusterBinding)
		if !ok || peer.UID == b.UID || peer.Name == b.Name || peer.Spec.ClusterID != b.Spec.ClusterID {
			continue
		}
		if claimedBefore(peer, b) && (owner == nil || claimedBefore(peer, owner)) {
			owner = peer
		}
	}
	return owner
}

// claimedBefore orders claims on a clusterID: the older binding first.
// Creation times have a resolution of a second, so for bindings created in
// the same second the one that already passed validation keeps its claim
// (a running binding is never failed by a newcomer), then the name decides.
func claimedBefore(a, b *kubeoceanv1alpha1.ClusterBinding) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if validatedA, validatedB := validated(a), validated(b); validatedA != validatedB {
		return validatedA
	}
	return a.Name < b.Name
}

// validated reports whether the binding passed validation once: only then
// was its physical cluster checked, whatever the outcome.
func validated(b *kubeoceanv1alpha1.ClusterBinding) bool {
	connected := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionConnected)
	return connected != nil && connected.Reason != kubeoceanv1alpha1.ReasonNotChecked
}
