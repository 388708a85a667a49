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

package pod

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

func secretRef(name string) *corev1.LocalObjectReference {
	return &corev1.LocalObjectReference{Name: name}
}

// volumeSecretCases has one case per field of corev1.VolumeSource: the
// volume, the Secret it names (none for types that name none, or whose
// references are read apart), and how the rewritten volume names it.
var volumeSecretCases = []struct {
	field  string
	volume corev1.VolumeSource
	secret string
	// physical reads the Secret name back from the translated volume.
	physical func(corev1.VolumeSource) string
}{
	{field: "CSI", secret: "csi-creds",
		volume:   corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io", NodePublishSecretRef: secretRef("csi-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.CSI.NodePublishSecretRef.Name }},
	{field: "AzureFile", secret: "azure-creds",
		volume:   corev1.VolumeSource{AzureFile: &corev1.AzureFileVolumeSource{SecretName: "azure-creds", ShareName: "share"}},
		physical: func(v corev1.VolumeSource) string { return v.AzureFile.SecretName }},
	{field: "CephFS", secret: "ceph-creds",
		volume:   corev1.VolumeSource{CephFS: &corev1.CephFSVolumeSource{Monitors: []string{"10.0.0.1:6789"}, SecretRef: secretRef("ceph-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.CephFS.SecretRef.Name }},
	{field: "Cinder", secret: "cinder-creds",
		volume:   corev1.VolumeSource{Cinder: &corev1.CinderVolumeSource{VolumeID: "vol", SecretRef: secretRef("cinder-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.Cinder.SecretRef.Name }},
	{field: "FlexVolume", secret: "flex-creds",
		volume:   corev1.VolumeSource{FlexVolume: &corev1.FlexVolumeSource{Driver: "example.com/flex", SecretRef: secretRef("flex-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.FlexVolume.SecretRef.Name }},
	{field: "ISCSI", secret: "chap-creds",
		volume: corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.2:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 0,
			SessionCHAPAuth: true, SecretRef: secretRef("chap-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.ISCSI.SecretRef.Name }},
	{field: "RBD", secret: "rbd-creds",
		volume:   corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"10.0.0.1:6789"}, RBDImage: "img", SecretRef: secretRef("rbd-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.RBD.SecretRef.Name }},
	{field: "ScaleIO", secret: "scaleio-creds",
		volume:   corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{Gateway: "https://gw", System: "sys", SecretRef: secretRef("scaleio-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.ScaleIO.SecretRef.Name }},
	{field: "StorageOS", secret: "storageos-creds",
		volume:   corev1.VolumeSource{StorageOS: &corev1.StorageOSVolumeSource{VolumeName: "vol", SecretRef: secretRef("storageos-creds")}},
		physical: func(v corev1.VolumeSource) string { return v.StorageOS.SecretRef.Name }},
	{field: "Secret", secret: "plain-secret",
		volume:   corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "plain-secret"}},
		physical: func(v corev1.VolumeSource) string { return v.Secret.SecretName }},
	{field: "Projected", secret: "projected-secret",
		volume: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "projected-secret"}}}}}},
		physical: func(v corev1.VolumeSource) string { return v.Projected.Sources[0].Secret.Name }},

	// Types that name no Secret of the pod's namespace.
	{field: "HostPath", volume: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}},
	{field: "EmptyDir", volume: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	{field: "GCEPersistentDisk", volume: corev1.VolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "pd"}}},
	{field: "AWSElasticBlockStore", volume: corev1.VolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "vol"}}},
	{field: "GitRepo", volume: corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{Repository: "https://example.com/repo.git"}}},
	{field: "NFS", volume: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "nfs", Path: "/"}}},
	{field: "Glusterfs", volume: corev1.VolumeSource{Glusterfs: &corev1.GlusterfsVolumeSource{EndpointsName: "ep", Path: "vol"}}},
	{field: "PersistentVolumeClaim", volume: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
	{field: "Flocker", volume: corev1.VolumeSource{Flocker: &corev1.FlockerVolumeSource{DatasetName: "ds"}}},
	{field: "DownwardAPI", volume: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}},
	{field: "FC", volume: corev1.VolumeSource{FC: &corev1.FCVolumeSource{WWIDs: []string{"w"}}}},
	{field: "ConfigMap", volume: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
	{field: "VsphereVolume", volume: corev1.VolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{VolumePath: "[ds] vol"}}},
	{field: "Quobyte", volume: corev1.VolumeSource{Quobyte: &corev1.QuobyteVolumeSource{Registry: "r", Volume: "v"}}},
	{field: "AzureDisk", volume: corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "u"}}},
	{field: "PhotonPersistentDisk", volume: corev1.VolumeSource{PhotonPersistentDisk: &corev1.PhotonPersistentDiskVolumeSource{PdID: "p"}}},
	{field: "PortworxVolume", volume: corev1.VolumeSource{PortworxVolume: &corev1.PortworxVolumeSource{VolumeID: "v"}}},
	{field: "Ephemeral", volume: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}},
	{field: "Image", volume: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/data:1"}}},
}

// TestVolumeSecretCasesCoverEveryVolumeType fails when the API gains a
// volume type this table (and so the syncer) has not been checked for.
func TestVolumeSecretCasesCoverEveryVolumeType(t *testing.T) {
	covered := map[string]bool{}
	for _, tc := range volumeSecretCases {
		set := reflect.ValueOf(tc.volume)
		if f := set.FieldByName(tc.field); !f.IsValid() || f.IsNil() {
			t.Errorf("case %s does not set VolumeSource.%s", tc.field, tc.field)
		}
		covered[tc.field] = true
	}
	fields := reflect.TypeFor[corev1.VolumeSource]()
	for i := range fields.NumField() {
		if name := fields.Field(i).Name; !covered[name] {
			t.Errorf("VolumeSource.%s has no case: does it name a Secret the syncer must copy?", name)
		}
	}
}

// TestVolumeSecretsAreCopiedAndRewritten: the Secret every volume type
// names is among the pod's copied and required references, and the
// physical pod names its copy; types that name none add nothing.
func TestVolumeSecretsAreCopiedAndRewritten(t *testing.T) {
	for _, tc := range volumeSecretCases {
		t.Run(tc.field, func(t *testing.T) {
			virtual := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: virtualNS, Name: virtualName, UID: virtualUID},
				Spec: corev1.PodSpec{
					NodeName:   virtualNode,
					Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}},
					Volumes:    []corev1.Volume{{Name: "v", VolumeSource: *tc.volume.DeepCopy()}},
				},
			}
			refs := references.Copied(virtual)
			required := requiredReferences(virtual)
			if tc.secret == "" {
				if len(refs.Secrets) != 0 || required.secrets.Len() != 0 {
					t.Fatalf("Secrets %v (required %v), want none", refs.Secrets, sortedList(required.secrets))
				}
				return
			}
			if !slices.Equal(refs.Secrets, []string{tc.secret}) {
				t.Errorf("copied Secrets %v, want [%s]", refs.Secrets, tc.secret)
			}
			if !required.secrets.Has(tc.secret) {
				t.Errorf("required Secrets %v lack %s", sortedList(required.secrets), tc.secret)
			}
			if got := references.IndexKey(references.KindSecret, virtualNS, tc.secret); !indexed(t, virtual, got) {
				t.Errorf("references index lacks %s", got)
			}

			physical := podspec.PhysicalPod(virtual, podspec.Translation{
				MountNamespace: mountNS, Owner: testOwner, PhysicalName: physicalName, PhysicalNode: physicalNode,
				Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual),
			})
			if got, want := tc.physical(physical.Spec.Volumes[0].VolumeSource), podtest.PhysicalNameOf(tc.secret); got != want {
				t.Errorf("physical pod names Secret %q, want its copy %q", got, want)
			}
			if got := tc.physical(virtual.Spec.Volumes[0].VolumeSource); got != tc.secret {
				t.Errorf("virtual pod rewritten in place: names %q", got)
			}
		})
	}
}

func indexed(t *testing.T, pod *corev1.Pod, key string) bool {
	t.Helper()
	keys, err := references.IndexKeys(pod)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Contains(keys, key)
}

// TestServiceAccountNameAnswersVirtualValue: the downward API's
// spec.serviceAccountName (env only: the API takes it in no volume)
// answers the virtual pod's service account, not the physical pod's.
func TestServiceAccountNameAnswersVirtualValue(t *testing.T) {
	virtual := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: virtualNS, Name: virtualName, UID: virtualUID},
		Spec: corev1.PodSpec{
			NodeName: virtualNode, ServiceAccountName: "builder",
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1", Env: []corev1.EnvVar{podtest.FieldEnv("SA", "spec.serviceAccountName")}}},
		},
	}
	physical := podspec.PhysicalPod(virtual, podspec.Translation{
		MountNamespace: mountNS, Owner: testOwner, PhysicalName: physicalName, PhysicalNode: physicalNode,
		Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual),
	})
	if env := physical.Spec.Containers[0].Env[0]; env.ValueFrom != nil || env.Value != "builder" {
		t.Errorf("env %+v, want the literal value builder", env)
	}
	if physical.Spec.ServiceAccountName != "" {
		t.Errorf("physical pod runs as service account %q", physical.Spec.ServiceAccountName)
	}
}
