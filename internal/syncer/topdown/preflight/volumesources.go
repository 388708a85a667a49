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

package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
)

// ClaimVolumes tells which virtual PersistentVolume a pod's claim would
// bring to the physical cluster; *dependents.Syncer implements it (see
// dependents.Syncer.ClaimVolume). Without one the claims are trusted:
// nothing is judged before they are copied.
type ClaimVolumes interface {
	ClaimVolume(ctx context.Context, namespace, name string) (*corev1.PersistentVolume, error)
}

var _ ClaimVolumes = (*dependents.Syncer)(nil)

// claimedVolumes is what a pod's claims bring to the physical cluster.
type claimedVolumes struct {
	// refusal says which claims are bound to a volume whose source the
	// lender does not allow; "" when none is.
	refusal string
	// copied are the virtual PVs that would be copied for the pod, by the
	// name of the pod volume that mounts their claim. Volumes the binding
	// provisioned are not among them: they are the lender's own storage.
	copied map[string]*corev1.PersistentVolume
}

// VolumeSources refuses a pod with a claim bound to a PersistentVolume
// whose source the lender does not allow (ReasonVolumeSourceNotAllowed):
// nothing of the pod is sent.
type VolumeSources struct {
	// Claims judges the claims; nil judges none.
	Claims ClaimVolumes
}

func (v VolumeSources) Check(ctx context.Context, pod *Pod) *Refusal {
	if refusal := claimsOf(ctx, pod, v.Claims).refusal; refusal != "" {
		return &Refusal{Reason: kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed, Message: refusal}
	}
	return nil
}

// claimsOf reads the volume behind each claim pod mounts, once per pod.
// It only reads: the pod is judged before anything of it is made. A claim
// not bound yet cannot be judged and is left to the copy, which waits for
// it (and refuses the volume itself, should it come to that).
func claimsOf(ctx context.Context, pod *Pod, judge ClaimVolumes) claimedVolumes {
	if pod.claims == nil {
		claims := judgeClaims(ctx, pod.Virtual, judge)
		pod.claims = &claims
	}
	return *pod.claims
}

func judgeClaims(ctx context.Context, virtual *corev1.Pod, judge ClaimVolumes) claimedVolumes {
	out := claimedVolumes{copied: map[string]*corev1.PersistentVolume{}}
	if judge == nil {
		return out
	}
	var refusals []string
	for _, v := range virtual.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pv, err := judge.ClaimVolume(ctx, virtual.Namespace, v.PersistentVolumeClaim.ClaimName)
		var refused *dependents.VolumeSourceError
		switch {
		case errors.As(err, &refused):
			refusals = append(refusals, fmt.Sprintf("volume %q: %v", v.Name, refused))
		case err != nil:
			klog.FromContext(ctx).V(4).Info("Claim not judged yet", "volume", v.Name, "claim", v.PersistentVolumeClaim.ClaimName, "err", err)
		case pv != nil:
			out.copied[v.Name] = pv
		}
	}
	out.refusal = strings.Join(refusals, "; ")
	return out
}

// withEffectiveVolumes replaces, in pod, each volume that mounts a claim
// of a copied PV by the PV's own source where Pod Security judges it: a
// copied PV is whatever the virtual cluster's user wrote, so for the
// physical node it is an inline volume with a claim in between, which the
// physical Pod Security admission, seeing only the claim, would let pass.
// A local volume is a directory of the node, judged as the hostPath it
// is. CSI sources stay claims: the levels allow CSI volumes anyway.
func withEffectiveVolumes(pod *corev1.Pod, copied map[string]*corev1.PersistentVolume) {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		pv := copied[v.Name]
		if pv == nil || v.PersistentVolumeClaim == nil {
			continue
		}
		if source, ok := inlineSourceOf(pv); ok {
			v.VolumeSource = source
		}
	}
}

// inlineSourceOf is the pod volume source that stands for the PV's source
// before Pod Security; false when the claim stands for it as well.
func inlineSourceOf(pv *corev1.PersistentVolume) (corev1.VolumeSource, bool) {
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.HostPath != nil:
		return corev1.VolumeSource{HostPath: s.HostPath.DeepCopy()}, true
	case s.Local != nil:
		return corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: s.Local.Path}}, true
	case s.NFS != nil:
		return corev1.VolumeSource{NFS: s.NFS.DeepCopy()}, true
	case s.ISCSI != nil:
		return corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{
			TargetPortal: s.ISCSI.TargetPortal, IQN: s.ISCSI.IQN, Lun: s.ISCSI.Lun, ReadOnly: s.ISCSI.ReadOnly,
		}}, true
	case s.FC != nil:
		return corev1.VolumeSource{FC: s.FC.DeepCopy()}, true
	}
	return corev1.VolumeSource{}, false
}
