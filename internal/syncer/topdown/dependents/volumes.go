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
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// PhysicalPVName is the name of the physical copy of the virtual PV name.
// PVs are cluster-scoped, so the namespace part of the rule is empty:
// name[:30] + "-" + hex(md5("/" + name)).
func PhysicalPVName(name string) string { return kubeoceanv1alpha1.PhysicalName("", name) }

// EnsurePVC makes the physical copy of the virtual PVC namespace/name exist
// and match, after the PV it is bound to (and that PV's CSI node-publish
// Secret); it returns the physical PVC's name. The virtual PVC must be
// Bound and name its volume, so until then a NotReadyError gives the pod's
// pending reason. A claim of a volume the binding provisioned is not
// copied: its name is that of the holder claim that keeps the volume in
// the mount namespace (see holderOf). A volume whose source the lender
// does not allow gives a *VolumeSourceError before anything is marked or
// copied.
func (s *Syncer) EnsurePVC(ctx context.Context, namespace, name string) (string, error) {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	pvc, err := boundClaim(ctx, s, namespace, name)
	if err != nil {
		return "", err
	}
	if holder, ok, err := s.holderOf(ctx, pvc); ok || err != nil {
		return holder, err
	}
	// Judged before the claim is marked: a refused volume leaves both
	// objects as the user wrote them.
	if _, err := s.boundVolume(ctx, pvc); err != nil {
		return "", err
	}
	// The claim is marked before its volume, so the PV controller, which
	// keeps a PV copied while a marked claim names it, never sees the
	// volume marked without its claim.
	if pvc, err = ensureMarked(ctx, s, s.pvcs, pvc, at, false); err != nil {
		return "", err
	}
	if _, err := s.ensurePV(ctx, pvc.Spec.VolumeName, pvc); err != nil {
		return "", err
	}
	_, err = ensureCopy(ctx, s, s.pvcs, pvc, at)
	return at.name, err
}

// EnsurePV makes the physical copy of the virtual PV name exist and match,
// with its CSI node-publish Secret; it returns the physical PV's name. The
// PV must be bound to a claim, and have a source the lender allows (else a
// *VolumeSourceError). A copy made while the source was allowed is kept:
// pods may use it, and a lender who withdraws an allowance stops new
// copies, not running workloads.
func (s *Syncer) EnsurePV(ctx context.Context, name string) (string, error) {
	return s.ensurePV(ctx, name, nil)
}

// ensurePV copies the PV; claim, when set, is the claim it must be bound to.
// A copy that still names a claim copy that is gone (released while the
// volume's copy stayed) is pre-bound by name again, so that the claim's
// next copy binds (see releaseStaleClaimRef).
func (s *Syncer) ensurePV(ctx context.Context, name string, claim *corev1.PersistentVolumeClaim) (string, error) {
	at := location{name: PhysicalPVName(name)}
	pv, err := virtualObject(ctx, s.pvs, "", name)
	if err != nil {
		return "", err
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || (claim != nil && (ref.Namespace != claim.Namespace || ref.Name != claim.Name)) {
		return "", &NotReadyError{Kind: KindPV, Name: name, Reason: ReasonPVNotBoundToClaim}
	}
	if err := s.admit(pv, claim); err != nil {
		return "", err
	}
	if pv, err = ensureMarked(ctx, s, s.pvs, pv, at, false); err != nil {
		return "", err
	}
	if secret, ok := CSISecretOf(pv); ok {
		if err := s.EnsureCSISecret(ctx, secret.Namespace, secret.Name); err != nil {
			return "", err
		}
	}
	if _, err = ensureCopy(ctx, s, s.pvs, pv, at); err != nil {
		return "", err
	}
	return at.name, s.releaseStaleClaimRef(ctx, pv)
}

// ReleasePVC deletes the physical copy of the virtual PVC namespace/name
// and then removes our marks from it. The PV follows through the PV
// controller once no marked claim names it.
func (s *Syncer) ReleasePVC(ctx context.Context, namespace, name string) error {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	if err := deleteCopy(ctx, s, s.pvcs, namespace, name, at); err != nil {
		return err
	}
	if err := deleteCopyElsewhere(ctx, s, s.pvcs, namespace, name, at); err != nil {
		return err
	}
	return unmarkVirtual(ctx, s, s.pvcs, namespace, name)
}

// ReleasePV deletes the physical copy of the virtual PV name and then
// removes our marks from it. Its CSI Secret follows through the Secret
// controller once no marked PV names it.
func (s *Syncer) ReleasePV(ctx context.Context, name string) error {
	if err := deleteCopy(ctx, s, s.pvs, "", name, location{name: PhysicalPVName(name)}); err != nil {
		return err
	}
	return unmarkVirtual(ctx, s, s.pvs, "", name)
}

// DeleteOrphanPVC deletes the physical copy of the virtual PVC
// namespace/name if the virtual PVC is gone or no longer marked by us.
func (s *Syncer) DeleteOrphanPVC(ctx context.Context, namespace, name string) error {
	at := location{namespace: s.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(namespace, name)}
	return deleteOrphan(ctx, s, s.pvcs, namespace, name, at)
}

// DeleteOrphanPV deletes the physical copy of the virtual PV name if the
// virtual PV is gone or no longer marked by us.
func (s *Syncer) DeleteOrphanPV(ctx context.Context, name string) error {
	return deleteOrphan(ctx, s, s.pvs, "", name, location{name: PhysicalPVName(name)})
}

// CSISecretOf is the Secret a PV's CSI driver is given on node publish;
// false when there is none. It keeps its namespace in the physical cluster,
// since the PV names it there.
func CSISecretOf(pv *corev1.PersistentVolume) (cache.ObjectName, bool) {
	if pv.Spec.CSI == nil || pv.Spec.CSI.NodePublishSecretRef == nil || pv.Spec.CSI.NodePublishSecretRef.Name == "" {
		return cache.ObjectName{}, false
	}
	ref := pv.Spec.CSI.NodePublishSecretRef
	return cache.ObjectName{Namespace: ref.Namespace, Name: ref.Name}, true
}

// A PVC copy takes the virtual spec with the volume name mapped. The data
// source goes: the volume exists already and is bound by name, and the
// source would name virtual objects. Past creation the API lets only the
// resources (expansion) change, so only they are compared.
var pvcContent = content[*corev1.PersistentVolumeClaim]{
	build: func(virtual *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
		spec := virtual.Spec.DeepCopy()
		spec.VolumeName = PhysicalPVName(virtual.Spec.VolumeName)
		spec.DataSource, spec.DataSourceRef = nil, nil
		return &corev1.PersistentVolumeClaim{Spec: *spec}
	},
	differs: func(actual, desired *corev1.PersistentVolumeClaim) bool {
		return !equality.Semantic.DeepEqual(actual.Spec.Resources, desired.Spec.Resources)
	},
	apply: func(actual, desired *corev1.PersistentVolumeClaim) {
		actual.Spec.Resources = *desired.Spec.Resources.DeepCopy()
	},
}

// pvContent: a PV copy takes the virtual spec, bound to the claim's copy in
// mountNamespace, and always with the Retain policy: the volume belongs to
// the virtual PV, so deleting the copy must never delete the storage. The
// CSI node-publish Secret reference keeps its namespace. The volume source
// is immutable, so only the mutable fields are compared; of the claimRef
// only what it names, since the physical binder fills in UID and version.
func pvContent(mountNamespace string) content[*corev1.PersistentVolume] {
	return content[*corev1.PersistentVolume]{
		build: func(virtual *corev1.PersistentVolume) *corev1.PersistentVolume {
			spec := virtual.Spec.DeepCopy()
			spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
			if ref := virtual.Spec.ClaimRef; ref != nil {
				spec.ClaimRef = &corev1.ObjectReference{
					Kind: "PersistentVolumeClaim", APIVersion: "v1",
					Namespace: mountNamespace, Name: kubeoceanv1alpha1.PhysicalName(ref.Namespace, ref.Name),
				}
			}
			return &corev1.PersistentVolume{Spec: *spec}
		},
		differs: func(actual, desired *corev1.PersistentVolume) bool {
			a, d := &actual.Spec, &desired.Spec
			return !equality.Semantic.DeepEqual(a.Capacity, d.Capacity) ||
				!slices.Equal(a.AccessModes, d.AccessModes) ||
				!slices.Equal(a.MountOptions, d.MountOptions) ||
				a.StorageClassName != d.StorageClassName ||
				a.PersistentVolumeReclaimPolicy != d.PersistentVolumeReclaimPolicy ||
				claimRefDiffers(a.ClaimRef, d.ClaimRef)
		},
		apply: func(actual, desired *corev1.PersistentVolume) {
			a, d := &actual.Spec, desired.Spec.DeepCopy()
			a.Capacity, a.AccessModes, a.MountOptions = d.Capacity, d.AccessModes, d.MountOptions
			a.StorageClassName, a.PersistentVolumeReclaimPolicy = d.StorageClassName, d.PersistentVolumeReclaimPolicy
			if claimRefDiffers(a.ClaimRef, d.ClaimRef) {
				a.ClaimRef = d.ClaimRef
			}
		},
	}
}

func claimRefDiffers(actual, desired *corev1.ObjectReference) bool {
	if actual == nil || desired == nil {
		return (actual == nil) != (desired == nil)
	}
	return actual.Namespace != desired.Namespace || actual.Name != desired.Name
}
