package syncer

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kubeocean/kubeocean/pkg/intern"
)

// The informer transform of the pod caches. A syncer caches each synced
// pod twice, as the virtual pod and as the physical pod made for it, and
// pods of one workload say mostly the same thing: namespace, label keys and
// values, annotation keys, images, container and volume names, mount
// paths, condition types and reasons, node names. compactPod shares those
// strings (package intern) and keeps every field, so nothing changes for
// readers; the controllers write pods back from what they read.

// compactPods shares the repeating strings of pods and the labels and
// annotations of any other object a scope holds.
func compactPods(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		compactPod(pod)
		return pod, nil
	}
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetLabels(intern.Map(accessor.GetLabels()))
		accessor.SetAnnotations(intern.Map(accessor.GetAnnotations()))
	}
	return obj, nil
}

// shared is intern.String for the string types of the API.
func shared[T ~string](s T) T { return T(intern.String(string(s))) }

func compactPod(pod *corev1.Pod) {
	pod.Namespace = shared(pod.Namespace)
	pod.GenerateName = shared(pod.GenerateName)
	pod.Labels = intern.Map(pod.Labels)
	pod.Annotations = intern.Map(pod.Annotations)
	for i := range pod.OwnerReferences {
		ref := &pod.OwnerReferences[i]
		ref.APIVersion, ref.Kind, ref.Name = shared(ref.APIVersion), shared(ref.Kind), shared(ref.Name)
	}
	for i := range pod.Finalizers {
		pod.Finalizers[i] = shared(pod.Finalizers[i])
	}

	spec := &pod.Spec
	spec.NodeName = shared(spec.NodeName)
	spec.ServiceAccountName = shared(spec.ServiceAccountName)
	spec.DeprecatedServiceAccount = shared(spec.DeprecatedServiceAccount)
	spec.SchedulerName = shared(spec.SchedulerName)
	spec.PriorityClassName = shared(spec.PriorityClassName)
	spec.RestartPolicy = shared(spec.RestartPolicy)
	spec.DNSPolicy = shared(spec.DNSPolicy)
	spec.Subdomain = shared(spec.Subdomain)
	if spec.PreemptionPolicy != nil {
		policy := shared(*spec.PreemptionPolicy)
		spec.PreemptionPolicy = &policy
	}
	for i := range spec.InitContainers {
		compactContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		compactContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		compactContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	for i := range spec.Volumes {
		compactVolume(&spec.Volumes[i])
	}
	for i := range spec.Tolerations {
		t := &spec.Tolerations[i]
		t.Key, t.Operator, t.Value, t.Effect = shared(t.Key), shared(t.Operator), shared(t.Value), shared(t.Effect)
	}
	for i := range spec.ImagePullSecrets {
		spec.ImagePullSecrets[i].Name = shared(spec.ImagePullSecrets[i].Name)
	}
	for i := range spec.HostAliases {
		alias := &spec.HostAliases[i]
		alias.IP = shared(alias.IP)
		for j := range alias.Hostnames {
			alias.Hostnames[j] = shared(alias.Hostnames[j])
		}
	}

	status := &pod.Status
	status.Phase = shared(status.Phase)
	status.QOSClass = shared(status.QOSClass)
	status.Reason = shared(status.Reason)
	status.HostIP = shared(status.HostIP)
	for i := range status.HostIPs {
		status.HostIPs[i].IP = shared(status.HostIPs[i].IP)
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		c.Type, c.Status, c.Reason, c.Message = shared(c.Type), shared(c.Status), shared(c.Reason), shared(c.Message)
	}
	for _, statuses := range [][]corev1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range statuses {
			compactContainerStatus(&statuses[i])
		}
	}
}

func compactContainer(c *corev1.Container) {
	c.Name = shared(c.Name)
	c.Image = shared(c.Image)
	c.ImagePullPolicy = shared(c.ImagePullPolicy)
	c.TerminationMessagePath = shared(c.TerminationMessagePath)
	c.TerminationMessagePolicy = shared(c.TerminationMessagePolicy)
	for i := range c.Env {
		e := &c.Env[i]
		e.Name, e.Value = shared(e.Name), shared(e.Value)
		if from := e.ValueFrom; from != nil {
			if ref := from.FieldRef; ref != nil {
				ref.APIVersion, ref.FieldPath = shared(ref.APIVersion), shared(ref.FieldPath)
			}
			if ref := from.ConfigMapKeyRef; ref != nil {
				ref.Name, ref.Key = shared(ref.Name), shared(ref.Key)
			}
			if ref := from.SecretKeyRef; ref != nil {
				ref.Name, ref.Key = shared(ref.Name), shared(ref.Key)
			}
		}
	}
	for i := range c.EnvFrom {
		from := &c.EnvFrom[i]
		from.Prefix = shared(from.Prefix)
		if from.ConfigMapRef != nil {
			from.ConfigMapRef.Name = shared(from.ConfigMapRef.Name)
		}
		if from.SecretRef != nil {
			from.SecretRef.Name = shared(from.SecretRef.Name)
		}
	}
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		m.Name, m.MountPath, m.SubPath = shared(m.Name), shared(m.MountPath), shared(m.SubPath)
	}
	for i := range c.Ports {
		p := &c.Ports[i]
		p.Name, p.Protocol, p.HostIP = shared(p.Name), shared(p.Protocol), shared(p.HostIP)
	}
}

func compactVolume(v *corev1.Volume) {
	v.Name = shared(v.Name)
	switch {
	case v.ConfigMap != nil:
		v.ConfigMap.Name = shared(v.ConfigMap.Name)
	case v.Secret != nil:
		v.Secret.SecretName = shared(v.Secret.SecretName)
	case v.PersistentVolumeClaim != nil:
		v.PersistentVolumeClaim.ClaimName = shared(v.PersistentVolumeClaim.ClaimName)
	case v.Projected != nil:
		for i := range v.Projected.Sources {
			source := &v.Projected.Sources[i]
			if token := source.ServiceAccountToken; token != nil {
				token.Audience, token.Path = shared(token.Audience), shared(token.Path)
			}
			if cm := source.ConfigMap; cm != nil {
				cm.Name = shared(cm.Name)
				compactKeys(cm.Items)
			}
			if secret := source.Secret; secret != nil {
				secret.Name = shared(secret.Name)
				compactKeys(secret.Items)
			}
			if api := source.DownwardAPI; api != nil {
				for j := range api.Items {
					item := &api.Items[j]
					item.Path = shared(item.Path)
					if item.FieldRef != nil {
						item.FieldRef.APIVersion, item.FieldRef.FieldPath = shared(item.FieldRef.APIVersion), shared(item.FieldRef.FieldPath)
					}
				}
			}
		}
	}
}

func compactKeys(items []corev1.KeyToPath) {
	for i := range items {
		items[i].Key, items[i].Path = shared(items[i].Key), shared(items[i].Path)
	}
}

func compactContainerStatus(s *corev1.ContainerStatus) {
	s.Name = shared(s.Name)
	s.Image = shared(s.Image)
	s.ImageID = shared(s.ImageID)
	if w := s.State.Waiting; w != nil {
		w.Reason, w.Message = shared(w.Reason), shared(w.Message)
	}
	if t := s.State.Terminated; t != nil {
		t.Reason, t.Message = shared(t.Reason), shared(t.Message)
	}
	if t := s.LastTerminationState.Terminated; t != nil {
		t.Reason, t.Message = shared(t.Reason), shared(t.Message)
	}
}

// The informer transform of the binding's physical objects (boundScope).
// Nothing writes a physical pod back from the cache: the controllers
// create it from the virtual pod, patch it (three-way merge, ephemeral
// containers) and delete it by UID. So its cached copy needs only what
// they read, and the spec is most of a pod: volumes (the token's projected
// volume, copies), environment, mounts, probes, tolerations. Readers:
// topdown/pod (merge.go: labels, annotations, deadline, images;
// ephemeral.go: ephemeral container names; the mapping annotations and
// status), bottomup/podstatus (status), kubeletapi (node name, annotations),
// unbind, the latency and binding metrics (status), dependents (annotations).

// compactPhysical slims the binding's physical pods (slimPhysicalPod) and
// shares the repeating strings of them and of the copies beside them.
func compactPhysical(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		slimPhysicalPod(pod)
	}
	return compactPods(obj)
}

// slimPhysicalPod keeps of a physical pod's spec the node, the deadline and
// each container's name and image; metadata and status stay whole.
func slimPhysicalPod(pod *corev1.Pod) {
	spec := &pod.Spec
	ephemeral := make([]corev1.EphemeralContainer, len(spec.EphemeralContainers))
	for i, c := range spec.EphemeralContainers {
		ephemeral[i].Name, ephemeral[i].Image = c.Name, c.Image
	}
	*spec = corev1.PodSpec{
		NodeName:              spec.NodeName,
		ActiveDeadlineSeconds: spec.ActiveDeadlineSeconds,
		InitContainers:        namesAndImages(spec.InitContainers),
		Containers:            namesAndImages(spec.Containers),
		EphemeralContainers:   ephemeral,
	}
	if len(ephemeral) == 0 {
		spec.EphemeralContainers = nil
	}
}

func namesAndImages(containers []corev1.Container) []corev1.Container {
	if containers == nil {
		return nil
	}
	out := make([]corev1.Container, len(containers))
	for i, c := range containers {
		out[i].Name, out[i].Image = c.Name, c.Image
	}
	return out
}
