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

package dependents

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/provision"
)

// annotationProvisionedBy names the provisioner of a PV.
const annotationProvisionedBy = "pv.kubernetes.io/provisioned-by"

// holderOf answers for a claim bound to a volume that a binding
// provisioned (package provision): such a claim is not copied, since its
// holder claim in the mount namespace already holds the physical volume,
// and a second physical PV for one volume would break the drivers that
// attach and mount per PV. It returns the holder's name and true for a
// volume of this binding; false for any other volume, which is copied.
//
// The virtual PV's annotations are only a claim: whoever may create PVs
// in the virtual cluster can write them. The proof is the holder, which
// only this binding writes: it must record the very claim (by UID) and
// hold the physical volume the PV names, so a forged PV can neither pass
// for provisioned storage nor lead a pod to another claim's holder.
func (s *Syncer) holderOf(ctx context.Context, claim *corev1.PersistentVolumeClaim) (string, bool, error) {
	pv, err := s.pvs.virtual.fresh(ctx, "", claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		return "", false, nil // the copy's path says so
	}
	if err != nil {
		return "", false, fmt.Errorf("reading virtual PersistentVolume %s: %w", claim.Spec.VolumeName, err)
	}
	by, holder := pv.Annotations[annotationProvisionedBy], pv.Annotations[kubeoceanv1alpha1.AnnotationHolderClaim]
	if holder == "" || !strings.HasPrefix(by, kubeoceanv1alpha1.GroupName+"/") {
		return "", false, nil
	}
	if by != provision.ProvisionerName(s.clusterID) {
		return "", true, &NotReadyError{Kind: KindPVC, Namespace: claim.Namespace, Name: claim.Name, Reason: ReasonProvisionedElsewhere}
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != claim.UID {
		return "", true, &NotReadyError{Kind: KindPV, Name: pv.Name, Reason: ReasonPVNotBoundToClaim}
	}
	held, err := s.pvcs.physical.fresh(ctx, s.mountNamespace, holder)
	switch {
	case apierrors.IsNotFound(err):
		return "", true, &NotReadyError{Kind: KindPVC, Namespace: claim.Namespace, Name: claim.Name, Reason: ReasonHolderMissing}
	case err != nil:
		return "", true, fmt.Errorf("reading holder claim %s/%s: %w", s.mountNamespace, holder, err)
	case held.Labels[kubeoceanv1alpha1.LabelVolumeHolder] != "true" ||
		held.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimUID] != string(claim.UID) ||
		held.Spec.VolumeName != pv.Annotations[kubeoceanv1alpha1.AnnotationPhysicalVolume]:
		return "", true, &NotReadyError{Kind: KindPVC, Namespace: claim.Namespace, Name: claim.Name, Reason: ReasonHolderMissing}
	}
	switch ours, err := s.adoptHolder(ctx, held); {
	case err != nil:
		return "", true, err
	case !ours:
		return "", true, &NotReadyError{Kind: KindPVC, Namespace: claim.Namespace, Name: claim.Name, Reason: ReasonHolderMissing}
	}
	return holder, true, nil
}

// adoptHolder tells whether held, a holder claim that records the virtual
// claim's UID and holds its volume, is this binding's, and makes it so
// when an earlier binding of this name made it. The claim's UID, which
// only a syncer of this virtual cluster saw and the tenant cannot choose,
// proves that binding a predecessor once no ClusterBinding has its UID
// (ownership.Predecessors), as a pod's UID does; its identity is then
// stamped on, which brings it into the binding's caches. A binding
// recreated after a forced deletion (which ran no unbinding sweep) thus
// keeps its provisioned volumes.
func (s *Syncer) adoptHolder(ctx context.Context, held *corev1.PersistentVolumeClaim) (bool, error) {
	if s.owner.Owns(held) {
		return true, nil
	}
	proven, err := s.predecessors.ProveByTwin(ctx, held)
	if err != nil || !proven {
		return false, err
	}
	adopted := held.DeepCopy()
	adopted.Labels = s.owner.Stamp(adopted.Labels)
	if _, err := s.pvcs.physical.client(held.Namespace).Update(ctx, adopted, metav1.UpdateOptions{}); err != nil {
		return false, fmt.Errorf("adopting holder claim %s/%s of an earlier binding: %w", held.Namespace, held.Name, err)
	}
	klog.FromContext(ctx).Info("Adopted the holder claim of an earlier binding", "holder", klog.KObj(held),
		"previousBindingUID", held.Labels[kubeoceanv1alpha1.LabelBindingUID])
	return true, nil
}
