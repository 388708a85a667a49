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
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

var (
	claimCopy  = kubeoceanv1alpha1.PhysicalName(ns, "data")
	volumeCopy = dependents.PhysicalPVName("pv-data")
)

// goneUID is the UID of a claim copy that was released.
const goneUID = types.UID("uid-released-claim-copy")

// released returns an Env in which the claim data and its volume pv-data
// were copied, the physical binder bound the copies (the claim copy's UID
// in the volume's claimRef), and the claim's copy was then released while
// the volume's copy stayed: the binder marked it Released, still naming
// the released claim.
func released(t *testing.T) *dependentstest.Env {
	t.Helper()
	claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
	e := dependentstest.New(t, []runtime.Object{claim, pv}, nil)
	if _, err := e.Syncer.EnsurePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	if err := e.Syncer.ReleasePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	copied := physicalPV(t, e)
	copied.Spec.ClaimRef.UID, copied.Spec.ClaimRef.ResourceVersion = goneUID, "41"
	copied.Status.Phase = corev1.VolumeReleased
	if _, err := e.Physical.CoreV1().PersistentVolumes().Update(context.Background(), copied, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	return e
}

func physicalPV(t *testing.T, e *dependentstest.Env) *corev1.PersistentVolume {
	t.Helper()
	pv, err := e.Physical.CoreV1().PersistentVolumes().Get(context.Background(), volumeCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// expectPreBound checks that the volume copy is still there, kept with
// Retain, and names the claim copy with uid.
func expectPreBound(t *testing.T, e *dependentstest.Env, uid types.UID) {
	t.Helper()
	pv := physicalPV(t, e)
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Namespace != mountNS || ref.Name != claimCopy || ref.UID != uid {
		t.Errorf("volume copy's claimRef %+v, want %s/%s with UID %q", ref, mountNS, claimCopy, uid)
	}
	if uid == "" && ref != nil && ref.ResourceVersion != "" {
		t.Errorf("volume copy's claimRef keeps the released claim's resourceVersion %q", ref.ResourceVersion)
	}
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("volume copy's reclaim policy %s, want Retain", pv.Spec.PersistentVolumeReclaimPolicy)
	}
}

// TestClaimUsedAgainBindsItsVolume: the claim is used again while its
// volume's copy still names the released claim copy's UID. The copy is
// pre-bound by name again before the claim's new copy is made, so the
// binder binds the two; it is neither deleted nor recreated.
func TestClaimUsedAgainBindsItsVolume(t *testing.T) {
	e := released(t)
	if _, err := e.Syncer.EnsurePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites(
		"virtual update persistentvolumeclaims app/data",
		"physical update persistentvolumes "+volumeCopy,
		"physical create persistentvolumeclaims mount/"+claimCopy,
	)
	expectPreBound(t, e, "")

	// The binder fills in the new copy's UID: nothing more to do.
	bound := physicalPV(t, e)
	bound.Spec.ClaimRef.UID = "uid-new-claim-copy"
	if _, err := e.Physical.CoreV1().PersistentVolumes().Update(context.Background(), bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	newCopy, err := e.Physical.CoreV1().PersistentVolumeClaims(mountNS).Get(context.Background(), claimCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	newCopy.UID = "uid-new-claim-copy"
	if _, err := e.Physical.CoreV1().PersistentVolumeClaims(mountNS).Update(context.Background(), newCopy, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	if _, err := e.Syncer.EnsurePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites()
	expectPreBound(t, e, "uid-new-claim-copy")
}

// TestVolumeEnsuredWhileItsClaimCopyIsRemade: the PV controller ensures
// the volume once the claim's copy was made again (a new UID) while the
// volume's copy still names the old one.
func TestVolumeEnsuredWhileItsClaimCopyIsRemade(t *testing.T) {
	e := released(t)
	if _, err := e.Syncer.EnsurePVC(e.Context(), ns, "data"); err != nil {
		t.Fatal(err)
	}
	// Someone (an older syncer) put the released UID back.
	stale := physicalPV(t, e)
	stale.Spec.ClaimRef.UID = goneUID
	if _, err := e.Physical.CoreV1().PersistentVolumes().Update(context.Background(), stale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	if _, err := e.Syncer.EnsurePV(e.Context(), "pv-data"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites("physical update persistentvolumes " + volumeCopy)
	expectPreBound(t, e, "")
}

// TestVolumeOfALiveClaimKeepsItsUID: a copy pre-bound by name (no UID
// yet), and one whose claim is there with that UID but not yet in the
// cache, are left as they are: unbinding a volume from its live claim
// would make that claim Lost.
func TestVolumeOfALiveClaimKeepsItsUID(t *testing.T) {
	t.Run("no UID", func(t *testing.T) {
		e := released(t)
		copied := physicalPV(t, e)
		copied.Spec.ClaimRef.UID, copied.Spec.ClaimRef.ResourceVersion = "", ""
		if _, err := e.Physical.CoreV1().PersistentVolumes().Update(context.Background(), copied, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.SyncCaches()
		e.Writes()
		if _, err := e.Syncer.EnsurePV(e.Context(), "pv-data"); err != nil {
			t.Fatal(err)
		}
		e.ExpectWrites()
		expectPreBound(t, e, "")
	})
	t.Run("claim not cached yet", func(t *testing.T) {
		e := released(t)
		// The claim's copy, with the UID the volume names, reaches the
		// cluster but not the cache.
		live := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: claimCopy, UID: goneUID,
			Labels:      dependentstest.Owner.Stamp(nil),
			Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualNamespace: ns, kubeoceanv1alpha1.AnnotationVirtualName: "data"},
		}}
		if err := e.Physical.Tracker().Add(live); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Syncer.EnsurePV(e.Context(), "pv-data"); err != nil {
			t.Fatal(err)
		}
		e.ExpectWrites()
		expectPreBound(t, e, goneUID)
	})
}

// TestStaleClaimRefOfAnotherVolumeIsLeftAlone: only the binding's own copy
// of the virtual PV, pre-bound where the copy of its claim lives, has its
// claimRef touched; a claim at that place that is not the binding's copy
// of the claim keeps the volume as it is.
func TestStaleClaimRefOfAnotherVolumeIsLeftAlone(t *testing.T) {
	other := ownership.Owner{ClusterID: "c2", BindingUID: "binding-c2"}
	for name, tc := range map[string]func(pv *corev1.PersistentVolume) []runtime.Object{
		"another binding's copy": func(pv *corev1.PersistentVolume) []runtime.Object {
			pv.Labels = other.Stamp(pv.Labels)
			return nil
		},
		"no binding identity": func(pv *corev1.PersistentVolume) []runtime.Object {
			delete(pv.Labels, kubeoceanv1alpha1.LabelBindingUID)
			return nil
		},
		"copy of another virtual PV": func(pv *corev1.PersistentVolume) []runtime.Object {
			pv.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] = "pv-other"
			return nil
		},
		"pre-bound to another claim": func(pv *corev1.PersistentVolume) []runtime.Object {
			pv.Spec.ClaimRef.Name = kubeoceanv1alpha1.PhysicalName(ns, "other")
			return nil
		},
		"pre-bound in another namespace": func(pv *corev1.PersistentVolume) []runtime.Object {
			pv.Spec.ClaimRef.Namespace = "elsewhere"
			return nil
		},
		"claim there is not our copy": func(*corev1.PersistentVolume) []runtime.Object {
			return []runtime.Object{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
				Namespace: mountNS, Name: claimCopy, UID: "uid-someone-elses-claim",
			}}}
		},
		"another binding's copy of the claim": func(*corev1.PersistentVolume) []runtime.Object {
			return []runtime.Object{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
				Namespace: mountNS, Name: claimCopy, UID: "uid-other-binding-claim", Labels: other.Stamp(nil),
				Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualNamespace: ns, kubeoceanv1alpha1.AnnotationVirtualName: "data"},
			}}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			e := released(t)
			copied := physicalPV(t, e)
			for _, obj := range tc(copied) {
				if err := e.Physical.Tracker().Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Physical.CoreV1().PersistentVolumes().Update(context.Background(), copied, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			e.SyncCaches()
			e.Writes()
			virtual, err := e.Virtual.CoreV1().PersistentVolumes().Get(context.Background(), "pv-data", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := e.Syncer.ReleaseStaleClaimRef(e.Context(), virtual); err != nil {
				t.Fatal(err)
			}
			e.ExpectWrites()
			if got := physicalPV(t, e).Spec.ClaimRef; got.UID != goneUID {
				t.Errorf("claimRef %+v changed, want the UID %q kept", got, goneUID)
			}
		})
	}
}

// TestStaleClaimRefConflict: the binder writes the volume between our read
// and our write; the write fails on its resourceVersion and is judged
// again from a live read.
func TestStaleClaimRefConflict(t *testing.T) {
	e := released(t)
	attempts := 0
	e.Physical.PrependReactor("update", "persistentvolumes", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if attempts++; attempts == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumes"}, volumeCopy, nil)
		}
		return false, nil, nil
	})
	if _, err := e.Syncer.EnsurePV(e.Context(), "pv-data"); err != nil {
		t.Fatal(err)
	}
	if attempts != 2 {
		t.Errorf("%d updates of the volume copy, want 2 (one conflict, one retry)", attempts)
	}
	expectPreBound(t, e, "")
}
