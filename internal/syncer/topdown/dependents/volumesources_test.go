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

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Sources of a virtual PV, by the name the allowances use.
var sources = map[string]corev1.PersistentVolumeSource{
	"hostPath":   {HostPath: &corev1.HostPathVolumeSource{Path: "/"}},
	"local":      {Local: &corev1.LocalVolumeSource{Path: "/var/lib/kubelet"}},
	"nfs":        {NFS: &corev1.NFSVolumeSource{Server: "10.0.0.9", Path: "/exports/team-b"}},
	"iscsi":      {ISCSI: &corev1.ISCSIPersistentVolumeSource{TargetPortal: "10.0.0.9:3260", IQN: "iqn.2001-04.com.example:b", Lun: 0}},
	"fc":         {FC: &corev1.FCVolumeSource{WWIDs: []string{"3600508b400105e210000900000490000"}}},
	"csi":        {CSI: &corev1.CSIPersistentVolumeSource{Driver: "disk.csi.example.com", VolumeHandle: "team-b-disk"}},
	"other csi":  {CSI: &corev1.CSIPersistentVolumeSource{Driver: "other.csi.example.com", VolumeHandle: "team-b-disk"}},
	"flexVolume": {FlexVolume: &corev1.FlexPersistentVolumeSource{Driver: "example/flex"}},
	"rbd":        {RBD: &corev1.RBDPersistentVolumeSource{CephMonitors: []string{"10.0.0.9"}, RBDImage: "b"}},
	"glusterfs":  {Glusterfs: &corev1.GlusterfsPersistentVolumeSource{EndpointsName: "gluster", Path: "b"}},
}

// everything allows every source a lender can allow, and the CSI driver
// disk.csi.example.com.
var everything = &kubeoceanv1alpha1.WorkloadAllowances{
	VolumeSources: []string{"hostPath", "local", "nfs", "iscsi", "fc"},
	CSIDrivers:    []string{dependentstest.CSIDriver},
}

// TestEnsurePVCCopiesOnlyAllowedSources: a virtual PV reaches the physical
// cluster only with a source the binding's policy allows; a refused one
// is a VolumeSourceError that names the volume, the claim and the source,
// and nothing is marked or copied (the claim included).
func TestEnsurePVCCopiesOnlyAllowedSources(t *testing.T) {
	for name, tc := range map[string]struct {
		source  string
		allowed *kubeoceanv1alpha1.WorkloadAllowances
		copied  bool
	}{
		"hostPath by default":          {source: "hostPath"},
		"local by default":             {source: "local"},
		"nfs by default":               {source: "nfs"},
		"iscsi by default":             {source: "iscsi"},
		"fc by default":                {source: "fc"},
		"csi by default":               {source: "csi"},
		"hostPath allowed":             {source: "hostPath", allowed: everything, copied: true},
		"nfs allowed":                  {source: "nfs", allowed: everything, copied: true},
		"local allowed":                {source: "local", allowed: everything, copied: true},
		"nfs, only hostPath allowed":   {source: "nfs", allowed: &kubeoceanv1alpha1.WorkloadAllowances{VolumeSources: []string{"hostPath"}}},
		"csi of the allowed driver":    {source: "csi", allowed: everything, copied: true},
		"csi of another driver":        {source: "other csi", allowed: everything},
		"flexVolume, all else allowed": {source: "flexVolume", allowed: everything},
		"rbd, all else allowed":        {source: "rbd", allowed: everything},
		"glusterfs, all else allowed":  {source: "glusterfs", allowed: everything},
	} {
		t.Run(name, func(t *testing.T) {
			claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
			pv.Spec.PersistentVolumeSource = source(tc.source)
			e := dependentstest.NewAllowing(t, []runtime.Object{claim, pv}, nil, dependentstest.Allowing(tc.allowed))

			_, err := e.Syncer.EnsurePVC(e.Context(), ns, "data")
			if tc.copied {
				if err != nil {
					t.Fatalf("EnsurePVC: %v", err)
				}
				copied, err := e.Physical.CoreV1().PersistentVolumes().Get(context.Background(), dependents.PhysicalPVName("pv-data"), metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !sameSource(copied.Spec.PersistentVolumeSource, sources[tc.source]) {
					t.Errorf("copied source %+v", copied.Spec.PersistentVolumeSource)
				}
				return
			}
			var refused *dependents.VolumeSourceError
			if !errors.As(err, &refused) {
				t.Fatalf("EnsurePVC err = %v, want a VolumeSourceError", err)
			}
			if refused.Volume != "pv-data" || refused.Namespace != ns || refused.Claim != "data" {
				t.Errorf("refusal names %+v", refused)
			}
			kind := tc.source
			if strings.HasSuffix(kind, " csi") {
				kind = "csi"
			}
			if refused.Source != kind {
				t.Errorf("refusal names source %q, want %q", refused.Source, kind)
			}
			if msg := err.Error(); !strings.Contains(msg, "pv-data") || !strings.Contains(msg, ns+"/data") || !strings.Contains(msg, refused.SourceDescription()) {
				t.Errorf("refusal %q names not the volume, the claim and the source", msg)
			}
			e.ExpectWrites()
		})
	}
}

// source is a copy of sources[name].
func source(name string) corev1.PersistentVolumeSource {
	s := sources[name]
	return *s.DeepCopy()
}

func sameSource(a, b corev1.PersistentVolumeSource) bool {
	return a.String() == b.String()
}

// TestEnsurePVRefusesSource: the PV controller's own path (EnsurePV)
// judges the source as well, before marking the volume.
func TestEnsurePVRefusesSource(t *testing.T) {
	claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
	pv.Spec.PersistentVolumeSource = source("hostPath")
	e := dependentstest.New(t, []runtime.Object{claim, pv}, nil)
	_, err := e.Syncer.EnsurePV(e.Context(), "pv-data")
	var refused *dependents.VolumeSourceError
	if !errors.As(err, &refused) || refused.Source != "hostPath" {
		t.Fatalf("EnsurePV err = %v, want a hostPath VolumeSourceError", err)
	}
	e.ExpectWrites()
	// The controllers do not retry it: only a change of the policies
	// can help, and that brings the pods back.
	if _, err := dependents.ResultOf(err); !controller.IsTerminal(err) {
		t.Errorf("ResultOf(%v) is retried", err)
	}
}

// TestClaimVolume: how a pod's claim is judged before anything of the pod
// is made.
func TestClaimVolume(t *testing.T) {
	t.Run("allowed volume", func(t *testing.T) {
		claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
		e := dependentstest.New(t, []runtime.Object{claim, pv}, nil)
		got, err := e.Syncer.ClaimVolume(e.Context(), ns, "data")
		if err != nil || got == nil || got.Name != "pv-data" {
			t.Fatalf("ClaimVolume = %v, %v; want pv-data", got, err)
		}
		e.ExpectWrites()
	})
	t.Run("refused volume", func(t *testing.T) {
		claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
		pv.Spec.PersistentVolumeSource = source("hostPath")
		e := dependentstest.New(t, []runtime.Object{claim, pv}, nil)
		got, err := e.Syncer.ClaimVolume(e.Context(), ns, "data")
		var refused *dependents.VolumeSourceError
		if !errors.As(err, &refused) || got == nil || got.Spec.HostPath == nil {
			t.Fatalf("ClaimVolume = %v, %v; want the hostPath volume refused", got, err)
		}
		e.ExpectWrites()
	})
	t.Run("claim not bound", func(t *testing.T) {
		claim, pv := dependentstest.BoundClaim("data", "pv-data", nil)
		claim.Status.Phase = corev1.ClaimPending
		e := dependentstest.New(t, []runtime.Object{claim, pv}, nil)
		_, err := e.Syncer.ClaimVolume(e.Context(), ns, "data")
		var notReady *dependents.NotReadyError
		if !errors.As(err, &notReady) || notReady.Reason != dependents.ReasonPVCNotBound {
			t.Fatalf("ClaimVolume err = %v, want PVCNotBound", err)
		}
	})
	// The binding's provisioned volumes are the lender's own storage
	// (here a hostPath one, as a local-path provisioner makes them): no
	// allowance is needed and no source is judged.
	t.Run("provisioned volume", func(t *testing.T) {
		claim, pv, holder := provisioned()
		pv.Spec.PersistentVolumeSource = source("hostPath")
		e := dependentstest.NewAllowing(t, []runtime.Object{claim, pv}, []runtime.Object{holder}, dependentstest.Allowing(nil))
		got, err := e.Syncer.ClaimVolume(e.Context(), ns, "data")
		if err != nil || got != nil {
			t.Fatalf("ClaimVolume = %v, %v; want nothing to judge", got, err)
		}
		if name, err := e.Syncer.EnsurePVC(e.Context(), ns, "data"); err != nil || name != holder.Name {
			t.Fatalf("EnsurePVC = %q, %v; want the holder", name, err)
		}
		e.ExpectWrites()
	})
	// A PV that only claims to be provisioned (annotations anyone who may
	// create PVs can write) is judged as what it is.
	t.Run("forged provisioned volume", func(t *testing.T) {
		claim, pv, _ := provisioned()
		pv.Spec.PersistentVolumeSource = source("hostPath")
		e := dependentstest.NewAllowing(t, []runtime.Object{claim, pv}, nil, dependentstest.Allowing(nil))
		if _, err := e.Syncer.ClaimVolume(e.Context(), ns, "data"); err == nil {
			t.Fatal("a PV without its holder passes for provisioned")
		}
		e.ExpectWrites()
	})
}
