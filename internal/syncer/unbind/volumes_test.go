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

package unbind

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/provision"
)

// holderAndVolume is a provisioned volume as the physical cluster has it: a
// holder claim of the binding in the mount namespace, bound to the PV the
// physical provisioner made for it (not the binding's) under policy.
func holderAndVolume(policy corev1.PersistentVolumeReclaimPolicy) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	claimUID := types.UID("virtual-claim-uid")
	holder := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
		Namespace: mount, Name: provision.HolderName(claimUID), UID: "holder-uid",
		Labels: owner.Stamp(map[string]string{kubeoceanv1alpha1.LabelVolumeHolder: "true"}),
		Annotations: map[string]string{
			kubeoceanv1alpha1.AnnotationVirtualClaimNamespace: "team", kubeoceanv1alpha1.AnnotationVirtualClaimName: "data-db-0",
			kubeoceanv1alpha1.AnnotationVirtualClaimUID: string(claimUID),
		},
	}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pvc-physical"}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pvc-physical", ResourceVersion: "7"},
		Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: policy,
			ClaimRef: &corev1.ObjectReference{Namespace: mount, Name: holder.Name, UID: holder.UID}},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound}}
	return holder, pv
}

// writesOn is the sequence of writes (verb resource/name) on the
// physical cluster, in order.
func writesOn(f *fixture) []string {
	var out []string
	for _, a := range f.physicalKube.Actions() {
		var name string
		switch a := a.(type) {
		case clienttesting.DeleteAction:
			name = a.GetName()
		case clienttesting.UpdateAction:
			name = a.GetObject().(metav1.Object).GetName()
		default:
			continue
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+name)
	}
	return out
}

func events(f *fixture) []string {
	recorder := f.c.opts.Recorder.(*record.FakeRecorder)
	var out []string
	for {
		select {
		case e := <-recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// Unbinding deletes the holder claim of a provisioned volume only after
// setting its PV to Retain: the PV and its data stay, with the virtual
// claim it held recorded on it, and an event on the binding lists it.
func TestUnbindingRetainsProvisionedVolumes(t *testing.T) {
	holder, pv := holderAndVolume(corev1.PersistentVolumeReclaimDelete)
	f := newFixture(t, newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer), nil, []runtime.Object{holder, pv})
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := f.physicalKube.CoreV1().PersistentVolumeClaims(mount).Get(ctx, holder.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the holder claim was not swept (%v)", err)
	}
	got, err := f.physicalKube.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the physical volume is gone: %v", err)
	}
	if got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("reclaim policy %s, want Retain", got.Spec.PersistentVolumeReclaimPolicy)
	}
	if got.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != "team" || got.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "data-db-0" {
		t.Errorf("the kept volume does not name its virtual claim: %v", got.Annotations)
	}
	writes := strings.Join(writesOn(f), ", ")
	if want := "update persistentvolumes/pvc-physical, delete persistentvolumeclaims/" + holder.Name; writes != want {
		t.Errorf("physical writes: %s; want %s", writes, want)
	}
	evs := events(f)
	if len(evs) == 0 || !strings.Contains(evs[0], kubeoceanv1alpha1.EventVolumesRetained) || !strings.Contains(evs[0], "pvc-physical (claim team/data-db-0)") {
		t.Errorf("events %q, want %s naming the kept volume first", evs, kubeoceanv1alpha1.EventVolumesRetained)
	}

	// Run again (the claim's deletion pending, say): nothing is written twice.
	f.physicalKube.ClearActions()
	if _, err := f.c.keepClaimData(ctx, holder, false); err != nil {
		t.Fatal(err)
	}
	if w := writesOn(f); len(w) != 0 {
		t.Errorf("writes on a volume kept already: %v", w)
	}
}

// With kubeocean.io/delete-volumes=true the operator asked for the old
// behaviour: the holder goes and its volume is left to its class's policy.
func TestUnbindingDeletesProvisionedVolumesWhenAsked(t *testing.T) {
	holder, pv := holderAndVolume(corev1.PersistentVolumeReclaimDelete)
	binding := newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer)
	binding.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationDeleteVolumes: "true"}
	f := newFixture(t, binding, nil, []runtime.Object{holder, pv})
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	if writes := strings.Join(writesOn(f), ", "); writes != "delete persistentvolumeclaims/"+holder.Name {
		t.Errorf("physical writes: %s; want only the holder's deletion", writes)
	}
	got, err := f.physicalKube.CoreV1().PersistentVolumes().Get(t.Context(), pv.Name, metav1.GetOptions{})
	if err != nil || got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		t.Errorf("volume %+v (%v), want it untouched under Delete", got, err)
	}
	for _, e := range events(f) {
		if strings.Contains(e, kubeoceanv1alpha1.EventVolumesRetained) {
			t.Errorf("event %q, but nothing was kept", e)
		}
	}
}

// A holder claim whose volume cannot be set to Retain is not deleted.
func TestUnbindingKeepsTheClaimWhenItCannotRetainItsVolume(t *testing.T) {
	holder, pv := holderAndVolume(corev1.PersistentVolumeReclaimDelete)
	f := newFixture(t, newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer), nil, []runtime.Object{holder, pv})
	f.physicalKube.PrependReactor("update", "persistentvolumes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("persistentvolumes"), pv.Name, errors.New("no"))
	})
	if _, err := f.c.sync(t.Context(), bindingName); err == nil {
		t.Error("sync succeeded although the volume could not be retained")
	}
	if _, err := f.physicalKube.CoreV1().PersistentVolumeClaims(mount).Get(t.Context(), holder.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the holder claim was deleted with its volume still under Delete (%v)", err)
	}
	if got := f.binding(t).Finalizers; len(got) != 1 {
		t.Errorf("binding finalizers %v: unbinding finished with the volume at risk", got)
	}
}

// A copied claim and PV go, but the copy, made Retain, is set back to
// Retain first if someone changed it (before its claim goes, or before it
// goes itself when its claim is gone already), whether or not the
// operator asked to delete provisioned volumes: its storage belongs to the
// virtual PV. Nothing is listed as kept, and a volume bound to another
// claim of the same name is not touched.
func TestUnbindingNeverDeletesTheStorageOfCopies(t *testing.T) {
	for _, deleteVolumes := range []bool{false, true} {
		claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "data-abc", UID: "copy-claim-uid",
			Labels: owner.Stamp(nil)}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-abc"}}
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-abc", UID: "copy-pv-uid", Labels: owner.Stamp(nil)},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				ClaimRef: &corev1.ObjectReference{Namespace: mount, Name: "data-abc", UID: claim.UID}}}
		// Bound to another claim of the same name: deleting ours releases nothing.
		stale := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "data-xyz", UID: "stale-uid",
			Labels: owner.Stamp(nil)}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-other"}}
		other := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-other"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				ClaimRef: &corev1.ObjectReference{Namespace: mount, Name: "data-xyz", UID: "newer-uid"}}}
		lone := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-lone", UID: "lone-uid", Labels: owner.Stamp(nil)},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRecycle,
				ClaimRef: &corev1.ObjectReference{Namespace: mount, Name: "data-gone"}}}
		binding := newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer)
		if deleteVolumes {
			binding.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationDeleteVolumes: "true"}
		}
		f := newFixture(t, binding, nil, []runtime.Object{claim, pv, stale, other, lone})
		if _, err := f.c.sync(t.Context(), bindingName); err != nil {
			t.Fatal(err)
		}
		writes := strings.Join(writesOn(f), ", ")
		want := "update persistentvolumes/pv-abc, delete persistentvolumeclaims/data-abc, delete persistentvolumeclaims/data-xyz, " +
			"delete persistentvolumes/pv-abc, update persistentvolumes/pv-lone, delete persistentvolumes/pv-lone"
		if writes != want {
			t.Errorf("deleteVolumes=%v: physical writes: %s; want %s", deleteVolumes, writes, want)
		}
		for _, a := range f.physicalKube.Actions() {
			if u, ok := a.(clienttesting.UpdateAction); ok {
				if got := u.GetObject().(*corev1.PersistentVolume); got.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
					t.Errorf("deleteVolumes=%v: updated %s to %s", deleteVolumes, got.Name, got.Spec.PersistentVolumeReclaimPolicy)
				}
			}
		}
		for _, e := range events(f) {
			if strings.Contains(e, kubeoceanv1alpha1.EventVolumesRetained) {
				t.Errorf("deleteVolumes=%v: event %q lists a copy", deleteVolumes, e)
			}
		}
	}
}
