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

// Package podtest holds what the tests of the top-down pod packages start
// from: a virtual pod bound to a virtual node of one binding, and the
// names around it.
package podtest

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

// The binding, the pod and the nodes of BoundPod.
const (
	ClusterID        = "c1"
	BindingUID       = types.UID("binding-uid")
	MountNamespace   = "mount"
	VirtualNamespace = "team-a"
	VirtualName      = "web"
	VirtualNode      = "vnode-c1-node-1"
	PhysicalNode     = "node-1"
	VirtualUID       = types.UID("virtual-uid")
	PhysicalUID      = types.UID("physical-uid")
)

var (
	// PhysicalName is BoundPod's physical name.
	PhysicalName = kubeoceanv1alpha1.PhysicalName(VirtualNamespace, VirtualName)
	// Owner is the binding's identity on what it creates.
	Owner = ownership.Owner{ClusterID: ClusterID, BindingUID: BindingUID}
)

// BoundPod is a virtual pod the scheduler bound to VirtualNode, with a
// ConfigMap and a Secret env and no token volume.
func BoundPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: VirtualNamespace, Name: VirtualName, UID: VirtualUID, ResourceVersion: "10",
			Labels: map[string]string{"app": "web"},
		},
		Spec: corev1.PodSpec{
			NodeName: VirtualNode,
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1",
				Env: []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "config"}, Key: "a"}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "b"}}},
				},
			}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// Mapped adds to pod the mapping annotations naming PhysicalName in
// MountNamespace; with uid also the physical UID the bottom-up side
// records.
func Mapped(pod *corev1.Pod, uid types.UID) *corev1.Pod {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace] = MountNamespace
	pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] = PhysicalName
	if uid != "" {
		pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] = string(uid)
	}
	return pod
}

// PhysicalNameOf is the physical name of the object name of
// VirtualNamespace.
func PhysicalNameOf(name string) string {
	return kubeoceanv1alpha1.PhysicalName(VirtualNamespace, name)
}

// CopiedNames are the physical names of the ConfigMaps, Secrets and claims
// pod refers to, by virtual name, as the dependents library returns them.
func CopiedNames(pod *corev1.Pod) (configMaps, secrets, pvcs map[string]string) {
	refs := references.Copied(pod)
	configMaps, secrets, pvcs = map[string]string{}, map[string]string{}, map[string]string{}
	for _, n := range refs.ConfigMaps {
		configMaps[n] = kubeoceanv1alpha1.PhysicalName(pod.Namespace, n)
	}
	for _, n := range refs.Secrets {
		secrets[n] = kubeoceanv1alpha1.PhysicalName(pod.Namespace, n)
	}
	for _, n := range refs.PVCs {
		pvcs[n] = kubeoceanv1alpha1.PhysicalName(pod.Namespace, n)
	}
	return configMaps, secrets, pvcs
}

// FieldEnv is an environment variable from the pod's field fieldPath.
func FieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath}}}
}

// ConfigMapEnv is an environment variable from key "k" of configMap.
func ConfigMapEnv(name, configMap string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: "k"}}}
}

// SecretEnv is an environment variable from key "k" of secret.
func SecretEnv(name, secret string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: "k"}}}
}

// ProjectedVolume is a projected volume of sources.
func ProjectedVolume(name string, mode *int32, sources ...corev1.VolumeProjection) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: mode, Sources: sources}}}
}
