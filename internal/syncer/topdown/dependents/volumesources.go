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
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
)

// Source kinds that a lender may allow (ResourceLeasingPolicy
// spec.allowances.volumeSources), by their field name in
// PersistentVolumeSource. Every other in-tree source is never copied: the
// deprecated plugins and flexVolume run code or reach storage on the node
// with credentials a tenant names, which no allowance should hand out.
var allowableSources = map[string]bool{"hostPath": true, "local": true, "nfs": true, "iscsi": true, "fc": true}

// sourceCSI is the field name of a CSI source.
const sourceCSI = "csi"

// VolumeSourceError says a virtual PersistentVolume is never copied to the
// physical cluster: its source is one the lender did not allow. A virtual
// PV is whatever a user of the virtual cluster wrote, and its physical copy
// is mounted by the physical kubelet; a hostPath of /, another team's CSI
// volume handle or an NFS export of anyone's would otherwise reach a
// physical node. Retrying does not help until the lender's policies allow
// the source, or the claim is bound to another volume.
type VolumeSourceError struct {
	// Volume is the virtual PV; Namespace and Claim the claim bound to it,
	// when one was asked for.
	Volume, Namespace, Claim string
	// Source is the source's field name in PersistentVolumeSource
	// (hostPath, csi, flexVolume, ...); Driver the CSI driver.
	Source, Driver string
}

func (e *VolumeSourceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "PersistentVolume %s", e.Volume)
	if e.Claim != "" {
		fmt.Fprintf(&b, " (bound to claim %s/%s)", e.Namespace, e.Claim)
	}
	fmt.Fprintf(&b, " has a %s source", e.SourceDescription())
	switch {
	case e.Source == sourceCSI:
		b.WriteString(", a driver the lender does not allow (ResourceLeasingPolicy spec.allowances.csiDrivers)")
	case allowableSources[e.Source]:
		b.WriteString(", which the lender does not allow (ResourceLeasingPolicy spec.allowances.volumeSources)")
	default:
		b.WriteString(", which Kubeocean never copies to the physical cluster")
	}
	return b.String()
}

// SourceDescription names the source as the messages do: "hostPath",
// "csi (driver x)".
func (e *VolumeSourceError) SourceDescription() string {
	if e.Source == sourceCSI {
		return fmt.Sprintf("csi (driver %q)", e.Driver)
	}
	if e.Source == "" {
		return "missing"
	}
	return e.Source
}

// volumeSourceOf is the field name of the PV's source in
// PersistentVolumeSource and, for CSI, its driver. Found by reflection so
// that a source added to the API later is refused like any unknown one
// rather than passing for none; "" when none or more than one is set.
func volumeSourceOf(pv *corev1.PersistentVolume) (kind, driver string) {
	v := reflect.ValueOf(pv.Spec.PersistentVolumeSource)
	t := v.Type()
	for i := range t.NumField() {
		field := v.Field(i)
		if field.Kind() != reflect.Pointer || field.IsNil() {
			continue
		}
		if kind != "" {
			return "", ""
		}
		kind, _, _ = strings.Cut(t.Field(i).Tag.Get("json"), ",")
	}
	if kind == sourceCSI {
		driver = pv.Spec.CSI.Driver
	}
	return kind, driver
}

// refusedSource is why the PV may not be copied under allowed; nil when it
// may.
func refusedSource(pv *corev1.PersistentVolume, allowed allowances.Set) *VolumeSourceError {
	kind, driver := volumeSourceOf(pv)
	switch {
	case kind == sourceCSI && driver != "" && allowed.CSIDriver(driver):
		return nil
	case allowableSources[kind] && allowed.VolumeSource(kind):
		return nil
	}
	return &VolumeSourceError{Volume: pv.Name, Source: kind, Driver: driver}
}

// admit returns a *VolumeSourceError when the virtual PV may not be
// copied; claim, when set, is named in it. Reading the binding's
// allowances costs a walk of the cached policies, a handful of objects.
func (s *Syncer) admit(pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	refused := refusedSource(pv, s.allowances.Current())
	if refused == nil {
		return nil
	}
	if claim != nil {
		refused.Namespace, refused.Claim = claim.Namespace, claim.Name
	}
	return refused
}

// boundVolume is the virtual PV the bound claim names, bound to that
// claim and with a source the lender allows.
func (s *Syncer) boundVolume(ctx context.Context, claim *corev1.PersistentVolumeClaim) (*corev1.PersistentVolume, error) {
	pv, err := virtualObject(ctx, s.pvs, "", claim.Spec.VolumeName)
	if err != nil {
		return nil, err
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != claim.Namespace || ref.Name != claim.Name {
		return nil, &NotReadyError{Kind: KindPV, Name: pv.Name, Reason: ReasonPVNotBoundToClaim}
	}
	return pv, s.admit(pv, claim)
}

// ClaimVolume tells how the physical pods of the binding would see the
// virtual claim namespace/name: the virtual PV it is bound to and that
// would be copied, or nil for a volume this binding provisioned (package
// provision), which is the lender's own storage and is used through its
// holder claim as it is. A volume whose source the lender does not allow
// is returned with a *VolumeSourceError; a claim not bound yet, or a PV not
// bound to it, gives a *NotReadyError, as EnsurePVC would. It only reads,
// so a pod can be judged before anything of it is made.
func (s *Syncer) ClaimVolume(ctx context.Context, namespace, name string) (*corev1.PersistentVolume, error) {
	pvc, err := boundClaim(ctx, s, namespace, name)
	if err != nil {
		return nil, err
	}
	if _, ok, err := s.holderOf(ctx, pvc); ok || err != nil {
		return nil, err
	}
	return s.boundVolume(ctx, pvc)
}

// boundClaim is the virtual claim namespace/name, ready to be copied and
// bound to a volume it names.
func boundClaim(ctx context.Context, s *Syncer, namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	pvc, err := virtualObject(ctx, s.pvcs, namespace, name)
	if err != nil {
		return nil, err
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return nil, &NotReadyError{Kind: KindPVC, Namespace: namespace, Name: name, Reason: ReasonPVCNotBound}
	}
	if pvc.Spec.VolumeName == "" {
		return nil, &NotReadyError{Kind: KindPVC, Namespace: namespace, Name: name, Reason: ReasonPVCNoVolumeName}
	}
	return pvc, nil
}
