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
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// maxListedInEvent bounds the volumes an event names; the log line names
// them all.
const maxListedInEvent = 10

// retainedVolume is a physical PV that unbinding left in place, and the
// virtual claim whose data it holds.
type retainedVolume struct {
	name, claim string
}

func (v retainedVolume) String() string {
	if v.claim == "" {
		return v.name
	}
	return v.name + " (claim " + v.claim + ")"
}

// deletesVolumes tells whether the operator asked, with the annotation on
// the binding, that unbinding delete the volumes the binding provisioned.
// Only the virtual cluster's administrators write bindings.
func deletesVolumes(binding *kubeoceanv1alpha1.ClusterBinding) bool {
	return binding.Annotations[kubeoceanv1alpha1.AnnotationDeleteVolumes] == "true"
}

// keepClaimData runs before the sweep deletes a physical claim. Deleting a
// bound claim releases its PV, and a PV released under the Delete policy
// is deleted by the physical cluster, data and all: the storage class's
// usual default for the holder claims of provisioned volumes. So the PV is
// first set to Retain; it stays, Released, and is returned to be listed.
// A copied claim's PV is the binding's own copy, already Retain, which the
// sweep deletes next while its storage stays with the virtual PV; it is
// made Retain too if someone changed it, and is not listed. Only on the
// operator's explicit request (deleteVolumes) are the holders' volumes
// left to their policy, as they were before unbinding kept them.
func (c *Controller) keepClaimData(ctx context.Context, obj metav1.Object, deleteVolumes bool) (*retainedVolume, error) {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	// A claim already being deleted was deleted by someone who asked for
	// it (the provisioner reclaiming a released virtual volume by its
	// Delete policy); unbinding does not second-guess that.
	if !ok || claim.DeletionTimestamp != nil || claim.Spec.VolumeName == "" {
		return nil, nil
	}
	holder := claim.Labels[kubeoceanv1alpha1.LabelVolumeHolder] == "true"
	if holder && deleteVolumes {
		return nil, nil
	}
	pvs := c.opts.PhysicalKube.CoreV1().PersistentVolumes()
	pv, err := pvs.Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the volume %s of claim %s/%s: %w", claim.Spec.VolumeName, claim.Namespace, claim.Name, err)
	}
	if !claimedBy(pv, claim) {
		return nil, nil // deleting the claim releases nothing
	}
	var kept *retainedVolume
	if !c.owner.Owns(pv) {
		kept = &retainedVolume{name: pv.Name}
		if holder && claim.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimName] != "" {
			kept.claim = claim.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimNamespace] + "/" + claim.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimName]
		}
	}
	retained := retainedForm(pv, claim, holder)
	if retained == nil {
		return kept, nil
	}
	// An update, not a patch: the syncer already holds it on PVs, and the
	// resourceVersion of the fresh read guards the change.
	if _, err := pvs.Update(ctx, retained, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("setting the reclaim policy of volume %s to Retain before deleting claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
	}
	klog.FromContext(ctx).Info("Set a physical volume to Retain before deleting its claim, so its data stays",
		"persistentVolume", klog.KObj(pv), "claim", klog.KObj(claim), "previousPolicy", pv.Spec.PersistentVolumeReclaimPolicy)
	return kept, nil
}

// claimedBy tells whether pv is bound to claim, the very one when the
// binder recorded its UID.
func claimedBy(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	return ref != nil && ref.Namespace == claim.Namespace && ref.Name == claim.Name && (ref.UID == "" || ref.UID == claim.UID)
}

// retainedForm is pv with the Retain policy and, for a holder's volume,
// the virtual claim it held recorded on it, since the holder that recorded
// it goes; nil when pv has both already.
func retainedForm(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim, holder bool) *corev1.PersistentVolume {
	annotations := map[string]string{}
	if holder {
		annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] = claim.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimNamespace]
		annotations[kubeoceanv1alpha1.AnnotationVirtualName] = claim.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimName]
	}
	changed := pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain
	for k, v := range annotations {
		if v != "" && pv.Annotations[k] != v {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	out := pv.DeepCopy()
	out.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	for k, v := range annotations {
		if v != "" {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}

// keepCopyData runs before the sweep deletes a copied PV. A copy is made
// with the Retain policy, since its storage belongs to the virtual PV; one
// whose policy was changed since would take the storage with it (a CSI
// provisioner deletes the volume of a deleted PV under Delete), so it is
// set back to Retain first, whatever the operator asked for provisioned
// volumes.
func (c *Controller) keepCopyData(ctx context.Context, obj metav1.Object) error {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRetain {
		return nil
	}
	retained := pv.DeepCopy()
	retained.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRetain
	if _, err := c.opts.PhysicalKube.CoreV1().PersistentVolumes().Update(ctx, retained, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting the reclaim policy of the copied volume %s to Retain before deleting it: %w", pv.Name, err)
	}
	klog.FromContext(ctx).Info("Set a copied physical volume back to Retain before deleting it, so its storage stays",
		"persistentVolume", klog.KObj(pv), "previousPolicy", pv.Spec.PersistentVolumeReclaimPolicy)
	return nil
}

// reportRetained tells the operator, in a log line and an event on the
// binding, which physical volumes unbinding left in place and what to do
// with them. The binding goes right after, so an event (and the volumes'
// own annotations) outlive it where a condition would not.
func (c *Controller) reportRetained(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding, kept []retainedVolume) {
	if len(kept) == 0 {
		return
	}
	names := make([]string, len(kept))
	for i, v := range kept {
		names[i] = v.String()
	}
	klog.FromContext(ctx).Info("Unbinding kept physical volumes with their data (reclaim policy Retain, Released)",
		"count", len(kept), "persistentVolumes", names)
	listed := names
	if len(listed) > maxListedInEvent {
		listed = append(listed[:maxListedInEvent:maxListedInEvent], fmt.Sprintf("and %d more (see the syncer's log)", len(names)-maxListedInEvent))
	}
	c.opts.Recorder.Eventf(binding, corev1.EventTypeNormal, kubeoceanv1alpha1.EventVolumesRetained,
		"Kept %d physical volumes with their data, reclaim policy Retain, Released: %s. Reuse or delete them in the physical cluster; unbinding with the annotation %s=true deletes them instead",
		len(kept), strings.Join(listed, ", "), kubeoceanv1alpha1.AnnotationDeleteVolumes)
}
