package references

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
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
func Copied(pod *corev1.Pod) References {
	stripped := *pod
	stripped.Spec.Volumes = make([]corev1.Volume, 0, len(pod.Spec.Volumes))
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil && projectsToken(v.Projected) {
			projected := *v.Projected
			projected.Sources = nil
			for _, source := range v.Projected.Sources {
				if source.ConfigMap == nil || source.ConfigMap.Name != RootCAConfigMap {
					projected.Sources = append(projected.Sources, source)
				}
			}
			v.Projected = &projected
		}
		stripped.Spec.Volumes = append(stripped.Spec.Volumes, v)
	}
	return Of(&stripped)
}

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
func Of(pod *corev1.Pod) References {
	configMaps, secrets, pvcs := sets.New[string](), sets.New[string](), sets.New[string]()
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			configMaps.Insert(v.ConfigMap.Name)
		case v.Secret != nil:
			secrets.Insert(v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			pvcs.Insert(v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, source := range v.Projected.Sources {
				if source.ConfigMap != nil {
					configMaps.Insert(source.ConfigMap.Name)
				}
				if source.Secret != nil {
					secrets.Insert(source.Secret.Name)
				}
			}
		default:
			if ref := VolumeSecret(&v.VolumeSource); ref != nil {
				secrets.Insert(*ref)
			}
		}
	}
	for _, c := range AllContainers(&pod.Spec) {
		for _, env := range c.Env {
			if env.ValueFrom == nil {
				continue
			}
			if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil {
				configMaps.Insert(ref.Name)
			}
			if ref := env.ValueFrom.SecretKeyRef; ref != nil {
				secrets.Insert(ref.Name)
			}
		}
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef != nil {
				configMaps.Insert(from.ConfigMapRef.Name)
			}
			if from.SecretRef != nil {
				secrets.Insert(from.SecretRef.Name)
			}
		}
	}
	for _, s := range pod.Spec.ImagePullSecrets {
		secrets.Insert(s.Name)
	}
	configMaps.Delete("")
	secrets.Delete("")
	pvcs.Delete("")
	return References{ConfigMaps: sets.List(configMaps), Secrets: sets.List(secrets), PVCs: sets.List(pvcs)}
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
