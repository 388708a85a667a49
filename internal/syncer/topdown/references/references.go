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

	corev1 "k8s.io/api/core/v1"
)

// References are the names a pod uses, each list sorted and without
// duplicates.
type References struct {
	ConfigMaps []string
	Secrets    []string
	PVCs       []string
}

// RootCAConfigMap is the ConfigMap in which every namespace publishes its
// cluster's CA, projected next to service-account tokens.
const RootCAConfigMap = "kube-root-ca.crt"

// Copied are the references the syncer copies for pod: those of Of, except
// kube-root-ca.crt projected next to a service-account token, which the
// pod's token Secret serves instead. The pod controller copies exactly
// these, and the copy controllers count exactly these as use, so an object
// no copy is made for is never marked or copied by them either.
//
// Index functions and event handlers call it on every pod event, so it
// reads the pod in place and allocates only the lists it returns.
func Copied(pod *corev1.Pod) References { return collect(pod, true) }

func projectsToken(projected *corev1.ProjectedVolumeSource) bool {
	for _, source := range projected.Sources {
		if source.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// Of collects the references of pod: volumes (including projected
// sources and the Secrets of volume plugins, see VolumeSecret), env valueFrom and envFrom of every container kind, and
// imagePullSecrets. Optional references are included too: when the object
// exists it must be copied for the pod to see it.
func Of(pod *corev1.Pod) References { return collect(pod, false) }

// collect is Of, leaving out the root CA projected next to a token when
// tokenServesRootCA is set (Copied).
func collect(pod *corev1.Pod, tokenServesRootCA bool) References {
	var r References
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.ConfigMap != nil:
			r.ConfigMaps = append(r.ConfigMaps, v.ConfigMap.Name)
		case v.Secret != nil:
			r.Secrets = append(r.Secrets, v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			r.PVCs = append(r.PVCs, v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			skipRootCA := tokenServesRootCA && projectsToken(v.Projected)
			for _, source := range v.Projected.Sources {
				if source.ConfigMap != nil && !(skipRootCA && source.ConfigMap.Name == RootCAConfigMap) {
					r.ConfigMaps = append(r.ConfigMaps, source.ConfigMap.Name)
				}
				if source.Secret != nil {
					r.Secrets = append(r.Secrets, source.Secret.Name)
				}
			}
		default:
			if ref := VolumeSecret(&v.VolumeSource); ref != nil {
				r.Secrets = append(r.Secrets, *ref)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		r.addEnv(pod.Spec.InitContainers[i].Env, pod.Spec.InitContainers[i].EnvFrom)
	}
	for i := range pod.Spec.Containers {
		r.addEnv(pod.Spec.Containers[i].Env, pod.Spec.Containers[i].EnvFrom)
	}
	for i := range pod.Spec.EphemeralContainers {
		r.addEnv(pod.Spec.EphemeralContainers[i].Env, pod.Spec.EphemeralContainers[i].EnvFrom)
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		r.Secrets = append(r.Secrets, s.Name)
	}
	r.ConfigMaps, r.Secrets, r.PVCs = normalized(r.ConfigMaps), normalized(r.Secrets), normalized(r.PVCs)
	return r
}

// addEnv adds the references of a container's environment.
func (r *References) addEnv(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for i := range env {
		from := env[i].ValueFrom
		if from == nil {
			continue
		}
		if ref := from.ConfigMapKeyRef; ref != nil {
			r.ConfigMaps = append(r.ConfigMaps, ref.Name)
		}
		if ref := from.SecretKeyRef; ref != nil {
			r.Secrets = append(r.Secrets, ref.Name)
		}
	}
	for i := range envFrom {
		if ref := envFrom[i].ConfigMapRef; ref != nil {
			r.ConfigMaps = append(r.ConfigMaps, ref.Name)
		}
		if ref := envFrom[i].SecretRef; ref != nil {
			r.Secrets = append(r.Secrets, ref.Name)
		}
	}
}

// normalized sorts names and drops duplicates and empty names.
func normalized(names []string) []string {
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > 0 && names[0] == "" {
		names = names[1:]
	}
	return names
}

// VolumeSecret points at the name of the Secret that a volume of a
// plugin type hands to its driver (credentials, keys, mount options): CSI
// inline nodePublishSecretRef, azureFile, cephfs, cinder, flexVolume,
// iscsi (CHAP), rbd, scaleIO and storageos. Nil for every other type,
// including secret and projected volumes, whose references are read
// apart, and for a type whose reference is not set. The name is in the
// pod's namespace; rewriting it through the pointer renames it in place.
func VolumeSecret(v *corev1.VolumeSource) *string {
	var ref *corev1.LocalObjectReference
	switch {
	case v.CSI != nil:
		ref = v.CSI.NodePublishSecretRef
	case v.AzureFile != nil:
		return &v.AzureFile.SecretName
	case v.CephFS != nil:
		ref = v.CephFS.SecretRef
	case v.Cinder != nil:
		ref = v.Cinder.SecretRef
	case v.FlexVolume != nil:
		ref = v.FlexVolume.SecretRef
	case v.ISCSI != nil:
		ref = v.ISCSI.SecretRef
	case v.RBD != nil:
		ref = v.RBD.SecretRef
	case v.ScaleIO != nil:
		ref = v.ScaleIO.SecretRef
	case v.StorageOS != nil:
		ref = v.StorageOS.SecretRef
	}
	if ref == nil {
		return nil
	}
	return &ref.Name
}

// AllContainers returns pointers to the init, regular and ephemeral
// containers' common fields, so callers can read or rewrite them in one
// loop.
func AllContainers(spec *corev1.PodSpec) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(spec.InitContainers)+len(spec.Containers)+len(spec.EphemeralContainers))
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		out = append(out, (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

// Kinds of reference, for index keys.
const (
	KindConfigMap = "ConfigMap"
	KindSecret    = "Secret"
	KindPVC       = "PersistentVolumeClaim"
)

// IndexName is the name of the pod informer index that IndexKeys feeds.
const IndexName = "kubeocean.io/references"

// IndexKey is the index key of a reference: kind/namespace/name.
func IndexKey(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// IndexKeys is an informer index function over pods: every object the
// syncer copies for a pod (Copied), as IndexKey. It lets a controller of ConfigMaps, Secrets or
// PVCs ask which pods still use an object.
func IndexKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	refs := Copied(pod)
	keys := make([]string, 0, len(refs.ConfigMaps)+len(refs.Secrets)+len(refs.PVCs))
	for _, n := range refs.ConfigMaps {
		keys = append(keys, IndexKey(KindConfigMap, pod.Namespace, n))
	}
	for _, n := range refs.Secrets {
		keys = append(keys, IndexKey(KindSecret, pod.Namespace, n))
	}
	for _, n := range refs.PVCs {
		keys = append(keys, IndexKey(KindPVC, pod.Namespace, n))
	}
	slices.Sort(keys)
	return keys, nil
}
