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

package dependentstest

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Namespace is the virtual namespace of the objects built here.
const Namespace = "app"

// ConfigMap is a virtual ConfigMap no binding has touched.
func ConfigMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, UID: types.UID("uid-cm-" + name), Labels: map[string]string{"app": "web"}},
		Data:       data,
	}
}

// Secret is a virtual Opaque Secret no binding has touched.
func Secret(namespace, name string, data map[string]string) *corev1.Secret {
	bytes := map[string][]byte{}
	for k, v := range data {
		bytes[k] = []byte(v)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-secret-" + name)},
		Type:       corev1.SecretTypeOpaque,
		Data:       bytes,
	}
}

// CSIDriver is the driver of the volumes built here.
const CSIDriver = "disk.csi.example.com"

// BoundClaim is a virtual PVC namespace/name Bound to the PV volume, and
// that PV; the PV's CSI driver gets secret (namespace/name) on node
// publish when secret is not nil.
func BoundClaim(name, volume string, secret *types.NamespacedName) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	storageClass := "fast"
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, UID: types.UID("uid-pvc-" + name)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: size},
			StorageClassName: &storageClass,
			VolumeName:       volume,
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: size},
	}
	csi := &corev1.CSIPersistentVolumeSource{Driver: CSIDriver, VolumeHandle: "handle-" + volume}
	if secret != nil {
		csi.NodePublishSecretRef = &corev1.SecretReference{Namespace: secret.Namespace, Name: secret.Name}
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: volume, UID: types.UID("uid-pv-" + volume)},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      size,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              storageClass,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: csi},
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: Namespace, Name: name, UID: claim.UID,
			},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	return claim, pv
}

// Pod is a running virtual pod on the binding's node Node that mounts the
// given ConfigMaps, Secrets and claims.
func Pod(name string, configMaps, secrets, claims []string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, UID: types.UID("uid-pod-" + name)},
		Spec: corev1.PodSpec{
			NodeName:   Node,
			Containers: []corev1.Container{{Name: "app", Image: "app"}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	add := func(name string, source corev1.VolumeSource) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: source})
	}
	for _, n := range configMaps {
		add("cm-"+n, corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
	}
	for _, n := range secrets {
		add("secret-"+n, corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: n}})
	}
	for _, n := range claims {
		add("pvc-"+n, corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: n}})
	}
	return pod
}
