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
	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

// The physical pods these tests expect, made as package podspec makes them.

func pn(name string) string { return kubeoceanv1alpha1.PhysicalName(virtualNS, name) }

func fieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: fieldPath}}}
}

func configMapEnv(name, configMap string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: "k"}}}
}

func projectedVolume(name string, mode *int32, sources ...corev1.VolumeProjection) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: mode, Sources: sources}}}
}

// resolvedNames are the names the fake dependents return for pod.
func resolvedNames(pod *corev1.Pod) podspec.Names {
	refs := references.Copied(pod)
	names := podspec.Names{Namespace: pod.Namespace, ConfigMaps: map[string]string{}, Secrets: map[string]string{}, PVCs: map[string]string{}}
	for _, n := range refs.ConfigMaps {
		names.ConfigMaps[n] = pn(n)
	}
	for _, n := range refs.Secrets {
		names.Secrets[n] = pn(n)
	}
	for _, n := range refs.PVCs {
		names.PVCs[n] = pn(n)
	}
	return names
}

// physicalFor is the physical pod created for virtual, as it is stored.
func physicalFor(virtual *corev1.Pod) *corev1.Pod {
	pod := podspec.PhysicalPod(virtual, podspec.Translation{MountNamespace: mountNS, Owner: testOwner, PhysicalName: physicalName, PhysicalNode: physicalNode,
		Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual)})
	pod.UID = physicalUID
	pod.ResourceVersion = "20"
	return pod
}
