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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// A PV copy is made pre-bound to its claim's copy by namespace and name
// (pvContent); the physical binder fills in that claim's UID. When the
// claim's copy is released (its last pod left) and the volume's copy is
// still there (it goes a grace period later, see package pv), the binder
// marks the volume Released, still naming the deleted claim's UID, and
// leaves it so: the copy's policy is Retain. A claim copy made again under
// the same name gets a new UID, and the binder binds no volume that names
// another claim's UID. So before and after a claim's copy is made, a
// volume copy that names a claim that is gone has that UID dropped: it is
// pre-bound by name again, as when it was made, and the binder binds it to
// the claim of that name.
//
// Nothing here deletes or recycles: dropping the UID changes whom the
// binder may bind the volume to, never its data or its reclaim policy.

// releaseStaleClaimRef drops the claim UID from the copy of the virtual PV
// virtual when the claim it names is gone or has been made again, so that
// the claim's current copy can bind. Only the binding's own copy of
// virtual is touched: it must carry the binding's identity, name virtual,
// and be pre-bound where the copy of virtual's claim lives. The write
// carries the copy's resourceVersion; a conflict (the binder wrote in
// between) is judged once more from a live read.
func (s *Syncer) releaseStaleClaimRef(ctx context.Context, virtual *corev1.PersistentVolume) error {
	at := location{name: PhysicalPVName(virtual.Name)}
	physical := s.pvs.physical.client("")
	actual, err := lookupCopy(ctx, s, s.pvs, at)
	for attempt := 0; ; attempt++ {
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("reading physical PersistentVolume %s: %w", at.name, err)
		}
		stale, err := s.namesGoneClaim(ctx, virtual, actual)
		if err != nil || !stale {
			return err
		}
		updated := actual.DeepCopy()
		gone := updated.Spec.ClaimRef.UID
		updated.Spec.ClaimRef.UID, updated.Spec.ClaimRef.ResourceVersion = "", ""
		written, err := physical.Update(ctx, updated, metav1.UpdateOptions{})
		switch {
		case err == nil:
			s.pvs.created.UpdateExpectation(locationOf(written), written)
			klog.FromContext(ctx).V(2).Info("Physical volume copy named a claim that is gone; pre-bound it to the claim's copy by name again",
				"physical", klog.KObj(actual), "claim", klog.KRef(updated.Spec.ClaimRef.Namespace, updated.Spec.ClaimRef.Name), "goneClaimUID", gone)
			return nil
		case apierrors.IsConflict(err) && attempt == 0:
			actual, err = physical.Get(ctx, at.name, metav1.GetOptions{})
		case apierrors.IsNotFound(err):
			return nil
		default:
			return fmt.Errorf("updating claimRef of physical PersistentVolume %s: %w", at.name, err)
		}
	}
}

// namesGoneClaim tells whether copy, a physical PV, is the binding's copy
// of virtual pre-bound to the copy of virtual's claim, and names by UID a
// claim there that is gone: none is there, or the binding's copy of that
// claim made since. A claim there that is not the binding's copy keeps the
// volume as it is.
func (s *Syncer) namesGoneClaim(ctx context.Context, virtual, copy *corev1.PersistentVolume) (bool, error) {
	ref, claim := copy.Spec.ClaimRef, virtual.Spec.ClaimRef
	if ref == nil || ref.UID == "" || claim == nil || copy.DeletionTimestamp != nil || !s.owns(copy, "", virtual.Name) ||
		ref.Namespace != s.mountNamespace || ref.Name != kubeoceanv1alpha1.PhysicalName(claim.Namespace, claim.Name) {
		return false, nil
	}
	cached, err := lookupCopy(ctx, s, s.pvcs, location{namespace: ref.Namespace, name: ref.Name})
	switch {
	case err == nil && cached.UID == ref.UID:
		return false, nil // the usual answer: the volume is its claim's
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("reading physical PersistentVolumeClaim %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	// Confirmed live: the cache may not show a claim the binder has just
	// bound, and unbinding the volume from it would make it Lost.
	live, err := s.pvcs.physical.client(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading physical PersistentVolumeClaim %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return live.UID != ref.UID && s.owns(live, claim.Namespace, claim.Name), nil
}
