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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

func TestEnsurePVCNotReady(t *testing.T) {
	for name, tc := range map[string]struct {
		edit   func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) []runtime.Object
		kind   string
		reason string
	}{
		"claim missing": {
			edit: func(*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) []runtime.Object { return nil },
			kind: dependents.KindPVC, reason: dependents.ReasonNotFound,
		},
		"claim pending": {
			edit: func(c *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) []runtime.Object {
				c.Status.Phase, c.Spec.VolumeName = corev1.ClaimPending, ""
				return []runtime.Object{c, pv}
			},
			kind: dependents.KindPVC, reason: dependents.ReasonPVCNotBound,
		},
		"bound without volume name": {
			edit: func(c *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) []runtime.Object {
				c.Spec.VolumeName = ""
				return []runtime.Object{c, pv}
			},
			kind: dependents.KindPVC, reason: dependents.ReasonPVCNoVolumeName,
		},
		"volume missing": {
			edit: func(c *corev1.PersistentVolumeClaim, _ *corev1.PersistentVolume) []runtime.Object {
				return []runtime.Object{c}
			},
			kind: dependents.KindPV, reason: dependents.ReasonNotFound,
		},
		"volume bound to another claim": {
			edit: func(c *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) []runtime.Object {
				pv.Spec.ClaimRef.Name = "other"
				return []runtime.Object{c, pv}
			},
			kind: dependents.KindPV, reason: dependents.ReasonPVNotBoundToClaim,
		},
	} {
		t.Run(name, func(t *testing.T) {
			claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
			e := dependentstest.New(t, tc.edit(claim, pv), nil)

			_, err := e.Syncer.EnsurePVC(e.Context(), ns, "data")
			var notReady *dependents.NotReadyError
			if !errors.As(err, &notReady) || notReady.Kind != tc.kind || notReady.Reason != tc.reason {
				t.Fatalf("err = %v, want NotReadyError %s %s", err, tc.kind, tc.reason)
			}
			// Nothing is created in the physical cluster.
			for _, w := range e.Writes() {
				if strings.HasPrefix(w, "physical") {
					t.Errorf("unexpected physical write %s", w)
				}
			}
		})
	}
}

func TestEnsurePVCCopiesVolumeAndCSISecret(t *testing.T) {
	csiSecret := types.NamespacedName{Namespace: "storage", Name: "disk-creds"}
	claim, pv := dependentstest.BoundClaim("data", "pv-data", &csiSecret)
	secret := dependentstest.Secret(csiSecret.Namespace, csiSecret.Name, map[string]string{"key": "k"})
	e := dependentstest.New(t, []runtime.Object{claim, pv, secret}, nil)
	claimCopy, volumeCopy := kubeoceanv1alpha1.PhysicalName(ns, "data"), dependents.PhysicalPVName("pv-data")

	got, err := e.Syncer.EnsurePVC(e.Context(), ns, "data")
	if err != nil || got != claimCopy {
		t.Fatalf("EnsurePVC = %q, %v; want %q", got, err, claimCopy)
	}
	// Each virtual object is marked before its copy is made; the claim's
	// copy comes last, when its volume is there to bind to.
	e.ExpectWrites(
		"virtual update persistentvolumeclaims app/data",
		"virtual update persistentvolumes pv-data",
		"virtual update secrets storage/disk-creds",
		"physical create secrets storage/disk-creds",
		"physical create persistentvolumes "+volumeCopy,
		"physical create persistentvolumeclaims mount/"+claimCopy,
	)

	ctx := context.Background()
	virtualSecret, err := e.Virtual.CoreV1().Secrets("storage").Get(ctx, "disk-creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if virtualSecret.Labels[kubeoceanv1alpha1.LabelUsedByPV] != "true" || virtualSecret.Labels[syncedBy] != "true" {
		t.Errorf("virtual CSI Secret labels %v", virtualSecret.Labels)
	}
	physicalSecret, err := e.Physical.CoreV1().Secrets("storage").Get(ctx, "disk-creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(physicalSecret.Data["key"]) != "k" || physicalSecret.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != "storage" {
		t.Errorf("physical CSI Secret: annotations %v, data %v", physicalSecret.Annotations, physicalSecret.Data)
	}

	physicalPV, err := e.Physical.CoreV1().PersistentVolumes().Get(ctx, volumeCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := physicalPV.Spec.ClaimRef
	if ref == nil || ref.Namespace != mountNS || ref.Name != claimCopy || ref.UID != "" {
		t.Errorf("physical PV claimRef %+v, want %s/%s without UID", ref, mountNS, claimCopy)
	}
	if physicalPV.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("physical PV reclaim policy %s, want Retain: deleting the copy must not delete the storage", physicalPV.Spec.PersistentVolumeReclaimPolicy)
	}
	if secretRef := physicalPV.Spec.CSI.NodePublishSecretRef; secretRef.Namespace != "storage" || secretRef.Name != "disk-creds" {
		t.Errorf("node-publish Secret %+v, want storage/disk-creds", secretRef)
	}
	if physicalPV.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "pv-data" {
		t.Errorf("physical PV annotations %v", physicalPV.Annotations)
	}

	physicalClaim, err := e.Physical.CoreV1().PersistentVolumeClaims(mountNS).Get(ctx, claimCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if physicalClaim.Spec.VolumeName != volumeCopy {
		t.Errorf("physical PVC volumeName %q, want %q", physicalClaim.Spec.VolumeName, volumeCopy)
	}

	// The physical binder fills in the claimRef's UID; that is no change
	// to undo, and a second call writes nothing.
	physicalPV.Spec.ClaimRef.UID = physicalClaim.UID
	if _, err := e.Physical.CoreV1().PersistentVolumes().Update(ctx, physicalPV, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	if _, err := e.Syncer.EnsurePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites()
}

func TestReleasePVCKeepsVolume(t *testing.T) {
	claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
	e := dependentstest.New(t, []runtime.Object{claim, pv}, nil)
	if _, err := e.Syncer.EnsurePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()

	// The claim's copy goes; the volume's follows through the PV
	// controller once the claim is unmarked.
	if err := e.Syncer.ReleasePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites("physical delete persistentvolumeclaims mount/"+kubeoceanv1alpha1.PhysicalName(ns, "data"),
		"virtual update persistentvolumeclaims app/data")

	if err := e.Syncer.ReleasePV(e.Context(), "pv-data"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites("physical delete persistentvolumes "+dependents.PhysicalPVName("pv-data"),
		"virtual update persistentvolumes pv-data")
}
