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

package dependents_test

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/provision"
)

// provisioned is a virtual claim bound to a volume the binding provisioned
// (package provision), that volume, and its holder claim in the mount
// namespace, bound to the physical PV local-1.
func provisioned() (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume, *corev1.PersistentVolumeClaim) {
	claim, pv := dependentstest.BoundClaim("data", "pvc-uid-pvc-data", nil)
	holder := provision.HolderName(claim.UID)
	pv.Annotations = map[string]string{
		"pv.kubernetes.io/provisioned-by":       provision.ProvisionerName(dependentstest.ClusterID),
		kubeoceanv1alpha1.AnnotationHolderClaim: holder, kubeoceanv1alpha1.AnnotationPhysicalVolume: "local-1",
	}
	return claim, pv, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: mountNS, Name: holder,
			Labels:      dependentstest.Owner.Stamp(map[string]string{kubeoceanv1alpha1.LabelVolumeHolder: "true"}),
			Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualClaimUID: string(claim.UID)}},
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: "local-1"},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
}

// TestEnsurePVCOfAProvisionedVolumeNamesItsHolder: the physical pod uses
// the holder claim, which already holds the physical volume; neither the
// claim nor its volume is copied (a second physical PV for one volume) or
// even marked.
func TestEnsurePVCOfAProvisionedVolumeNamesItsHolder(t *testing.T) {
	claim, pv, holder := provisioned()
	e := dependentstest.New(t, []runtime.Object{claim, pv}, []runtime.Object{holder})
	got, err := e.Syncer.EnsurePVC(e.Context(), ns, "data")
	if err != nil || got != holder.Name {
		t.Fatalf("EnsurePVC = %q, %v; want the holder %q", got, err, holder.Name)
	}
	e.ExpectWrites()
}

func TestEnsurePVCOfAProvisionedVolumeNotReady(t *testing.T) {
	for name, tc := range map[string]struct {
		edit   func(*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) []runtime.Object
		kind   string
		reason string
	}{
		"holder gone": {
			edit: func(*corev1.PersistentVolume, *corev1.PersistentVolumeClaim) []runtime.Object { return nil },
			kind: dependents.KindPVC, reason: dependents.ReasonHolderMissing,
		},
		"holder of another volume": {
			edit: func(_ *corev1.PersistentVolume, h *corev1.PersistentVolumeClaim) []runtime.Object {
				h.Spec.VolumeName = "local-2"
				return []runtime.Object{h}
			},
			kind: dependents.KindPVC, reason: dependents.ReasonHolderMissing,
		},
		// A PV forged to name another claim's holder and volume, which
		// the names of cluster-scoped PVs give away.
		"holder of another claim": {
			edit: func(_ *corev1.PersistentVolume, h *corev1.PersistentVolumeClaim) []runtime.Object {
				h.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimUID] = "uid-pvc-victim"
				return []runtime.Object{h}
			},
			kind: dependents.KindPVC, reason: dependents.ReasonHolderMissing,
		},
		"holder of another binding": {
			edit: func(_ *corev1.PersistentVolume, h *corev1.PersistentVolumeClaim) []runtime.Object {
				h.Labels = ownership.Owner{ClusterID: dependentstest.ClusterID, BindingUID: "other"}.Stamp(h.Labels)
				return []runtime.Object{h}
			},
			kind: dependents.KindPVC, reason: dependents.ReasonHolderMissing,
		},
		"volume of another cluster": {
			edit: func(pv *corev1.PersistentVolume, h *corev1.PersistentVolumeClaim) []runtime.Object {
				pv.Annotations["pv.kubernetes.io/provisioned-by"] = provision.ProvisionerName("c2")
				return []runtime.Object{h}
			},
			kind: dependents.KindPVC, reason: dependents.ReasonProvisionedElsewhere,
		},
		"volume of another claim": {
			edit: func(pv *corev1.PersistentVolume, h *corev1.PersistentVolumeClaim) []runtime.Object {
				pv.Spec.ClaimRef.UID = "someone-else"
				return []runtime.Object{h}
			},
			kind: dependents.KindPV, reason: dependents.ReasonPVNotBoundToClaim,
		},
	} {
		t.Run(name, func(t *testing.T) {
			claim, pv, holder := provisioned()
			physical := tc.edit(pv, holder)
			e := dependentstest.New(t, []runtime.Object{claim, pv}, physical)
			_, err := e.Syncer.EnsurePVC(e.Context(), ns, "data")
			var notReady *dependents.NotReadyError
			if !errors.As(err, &notReady) || notReady.Kind != tc.kind || notReady.Reason != tc.reason {
				t.Fatalf("err = %v, want NotReadyError %s %s", err, tc.kind, tc.reason)
			}
			e.ExpectWrites()
		})
	}
}

// A binding recreated under the same name after a forced deletion finds
// its predecessor's holder claim, which records the virtual claim's UID:
// that proves the predecessor once no binding has its UID, and the holder
// is adopted (the binding's identity stamped on), volume and all. A
// predecessor still existing keeps it.
func TestEnsurePVCAdoptsPredecessorsHolder(t *testing.T) {
	for name, tc := range map[string]struct {
		live    bool
		adopted bool
	}{
		"earlier binding gone":   {adopted: true},
		"earlier binding exists": {live: true},
	} {
		t.Run(name, func(t *testing.T) {
			claim, pv, holder := provisioned()
			holder.Labels = ownership.Owner{ClusterID: dependentstest.ClusterID, BindingUID: "earlier"}.Stamp(holder.Labels)
			predecessors := ownership.NewPredecessors(dependentstest.Owner, func(context.Context, types.UID) (bool, error) { return tc.live, nil })
			e := dependentstest.NewWithPredecessors(t, []runtime.Object{claim, pv}, []runtime.Object{holder}, predecessors)
			got, err := e.Syncer.EnsurePVC(e.Context(), ns, "data")
			if !tc.adopted {
				var notReady *dependents.NotReadyError
				if !errors.As(err, &notReady) || notReady.Reason != dependents.ReasonHolderMissing {
					t.Fatalf("err = %v, want %s", err, dependents.ReasonHolderMissing)
				}
				e.ExpectWrites()
				return
			}
			if err != nil || got != holder.Name {
				t.Fatalf("EnsurePVC = %q, %v; want the holder %q", got, err, holder.Name)
			}
			e.ExpectWrites("physical update persistentvolumeclaims " + mountNS + "/" + holder.Name)
			live, err := e.Physical.CoreV1().PersistentVolumeClaims(mountNS).Get(e.Context(), holder.Name, metav1.GetOptions{})
			if err != nil || !dependentstest.Owner.Owns(live) || live.Spec.VolumeName != "local-1" {
				t.Errorf("holder after adoption: %v, %v", live, err)
			}
		})
	}
}
