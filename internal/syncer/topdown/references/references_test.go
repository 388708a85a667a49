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

package references

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOf(t *testing.T) {
	optional := true
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-vol"}}}},
				{Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-vol"}}},
				{Name: "c", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-proj"}}},
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s-proj"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				}}}},
			},
			InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-init"}}}}}},
			Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{
				{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-env"}, Key: "k", Optional: &optional}}},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s-env"}, Key: "k"}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "D", Value: "plain"},
			}, EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s-envfrom"}}}}}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-debug"}}}}}}},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}, {Name: "s-vol"}, {Name: ""}},
		},
	}
	got := Of(pod)
	want := References{
		ConfigMaps: []string{"cm-debug", "cm-env", "cm-init", "cm-proj", "cm-vol"},
		Secrets:    []string{"registry", "s-env", "s-envfrom", "s-proj", "s-vol"},
		PVCs:       []string{"data"},
	}
	if !slices.Equal(got.ConfigMaps, want.ConfigMaps) || !slices.Equal(got.Secrets, want.Secrets) || !slices.Equal(got.PVCs, want.PVCs) {
		t.Fatalf("Of = %+v, want %+v", got, want)
	}

	keys, err := IndexKeys(pod)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ConfigMap/team/cm-vol", "Secret/team/registry", "PersistentVolumeClaim/team/data"} {
		if !slices.Contains(keys, k) {
			t.Errorf("index keys %v lack %s", keys, k)
		}
	}
	if len(keys) != 11 {
		t.Errorf("%d index keys, want 11", len(keys))
	}
}

func TestAllContainersRewritesInPlace(t *testing.T) {
	spec := &corev1.PodSpec{
		InitContainers:      []corev1.Container{{Name: "i"}},
		Containers:          []corev1.Container{{Name: "c"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e"}}},
	}
	for _, c := range AllContainers(spec) {
		c.Image = "rewritten"
	}
	if spec.InitContainers[0].Image != "rewritten" || spec.Containers[0].Image != "rewritten" || spec.EphemeralContainers[0].Image != "rewritten" {
		t.Fatal("AllContainers must point into the spec")
	}
}

// kube-root-ca.crt projected next to a token is served from the token
// Secret, so it is not copied, and not counted as use (IndexKeys); projected
// on its own, or by a pod without a token, it is.
func TestCopiedLeavesOutTheRootCABesideAToken(t *testing.T) {
	rootCA := corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap}}}
	token := corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}
	other := corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}
	pod := func(sources ...corev1.VolumeProjection) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "v", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}}}}
	}
	tests := []struct {
		pod  *corev1.Pod
		want []string
	}{
		{pod(token, rootCA, other), []string{"settings"}},
		{pod(rootCA, other), []string{RootCAConfigMap, "settings"}},
	}
	for _, tt := range tests {
		if got := Copied(tt.pod).ConfigMaps; !slices.Equal(got, tt.want) {
			t.Errorf("Copied = %v, want %v", got, tt.want)
		}
		keys, _ := IndexKeys(tt.pod)
		want := make([]string, 0, len(tt.want))
		for _, name := range tt.want {
			want = append(want, IndexKey(KindConfigMap, "team", name))
		}
		if !slices.Equal(keys, want) {
			t.Errorf("IndexKeys = %v, want %v", keys, want)
		}
	}
	if got := Of(pod(token, rootCA)).ConfigMaps; !slices.Equal(got, []string{RootCAConfigMap}) {
		t.Errorf("Of = %v: it lists every reference", got)
	}
}

// BenchmarkIndexKeys measures the references index on the pod of a
// workload (a ConfigMap, a Secret, the service-account token with the
// root CA), which informers compute for both versions of every pod event.
func BenchmarkIndexKeys(b *testing.B) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{
			{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
			{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{}},
			}}}},
		},
		Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "MODE", Value: "prod"}}}},
	}}
	b.ReportAllocs()
	for b.Loop() {
		if keys, _ := IndexKeys(pod); len(keys) != 2 {
			b.Fatalf("keys %v", keys)
		}
	}
}
