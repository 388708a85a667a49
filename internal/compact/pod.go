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

package compact

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// The informer transform of the pod caches. A syncer caches each synced
// pod twice, as the virtual pod and as the physical pod made for it, and
// pods of one workload say mostly the same thing: namespace, label keys and
// values, annotation keys, images, container and volume names, mount
// paths, condition types and reasons, node names; most of them carry the
// same labels, probes, environment and volume sources. compactPod shares
// those strings, maps and parts (intern.go), sizes the slices that
// decoding grows by doubling to fit, and keeps every field, so nothing
// changes for readers; the controllers write
// pods back from what they read (after a DeepCopy, as cached objects are
// shared and read-only).

// Transforms are the informer transforms of the pods and owned objects a
// syncer caches. ownAnnotations are the annotations whose values tie one
// object to its twin (names, UIDs) or time its renewal: those values are
// the object's own and stay as decoded, as a canonical copy of them would
// only add an entry of the interning table to each.
type Transforms struct{ ownAnnotations map[string]bool }

// NewTransforms returns the transforms that keep the values of
// ownAnnotations as decoded.
func NewTransforms(ownAnnotations ...string) Transforms {
	own := make(map[string]bool, len(ownAnnotations))
	for _, key := range ownAnnotations {
		own[key] = true
	}
	return Transforms{ownAnnotations: own}
}

// Pods shares the repeating strings of pods and the labels and annotations
// of any other object a scope holds, keeping every field.
func (t Transforms) Pods(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		t.compactPod(pod)
		return pod, nil
	}
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetLabels(SharedMap(accessor.GetLabels()))
		accessor.SetAnnotations(t.compactAnnotations(accessor.GetAnnotations()))
	}
	return obj, nil
}

// compactAnnotations shares annotation keys, and the values that repeat
// across objects (among them the physical pod's last-applied state, the
// same for the pods of one workload); the values of ownAnnotations stay as
// decoded.
func (t Transforms) compactAnnotations(annotations map[string]string) map[string]string {
	return InternMapOwn(annotations, func(key string) bool { return t.ownAnnotations[key] })
}

// fit returns s in an array of its length: decoding appends element by
// element, which leaves up to half of the array unused. Empty slices stay
// as they are.
func fit[T any](s []T) []T {
	if cap(s) == len(s) || len(s) == 0 {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}

// shared is Intern for the string types of the API.
func shared[T ~string](s T) T { return T(Intern(string(s))) }

func (t Transforms) compactPod(pod *corev1.Pod) {
	pod.Namespace = shared(pod.Namespace)
	pod.GenerateName = shared(pod.GenerateName)
	pod.Labels = SharedMap(pod.Labels)
	pod.Annotations = t.compactAnnotations(pod.Annotations)
	for i := range pod.OwnerReferences {
		ref := &pod.OwnerReferences[i]
		ref.APIVersion, ref.Kind, ref.Name = shared(ref.APIVersion), shared(ref.Kind), shared(ref.Name)
	}
	for i := range pod.Finalizers {
		pod.Finalizers[i] = shared(pod.Finalizers[i])
	}

	spec := &pod.Spec
	spec.InitContainers, spec.Containers = fit(spec.InitContainers), fit(spec.Containers)
	spec.Overhead = shareResources(spec.Overhead)
	shareRequirements(spec.Resources)
	spec.Volumes = fit(spec.Volumes)
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
	spec.NodeSelector = SharedMap(spec.NodeSelector)
	spec.SecurityContext = shareValue(podSecurityContexts, spec.SecurityContext)
	spec.Affinity = shareValue(affinities, spec.Affinity)
	spec.DNSConfig = shareValue(dnsConfigs, spec.DNSConfig)
	spec.TopologySpreadConstraints = shareList(spreadConstraints, spec.TopologySpreadConstraints)
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
	if len(spec.Tolerations) > 0 {
		spec.Tolerations = tolerations.Of(spec.Tolerations)
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
	status.Conditions = shareList(conditionLists, status.Conditions)
	status.InitContainerStatuses, status.ContainerStatuses = fit(status.InitContainerStatuses), fit(status.ContainerStatuses)
	status.Phase = shared(status.Phase)
	status.QOSClass = shared(status.QOSClass)
	status.Reason = shared(status.Reason)
	status.HostIP = shared(status.HostIP)
	for i := range status.HostIPs {
		status.HostIPs[i].IP = shared(status.HostIPs[i].IP)
	}
	for _, statuses := range [][]corev1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range statuses {
			compactContainerStatus(&statuses[i])
		}
	}
}

func compactContainer(c *corev1.Container) {
	c.VolumeMounts = fit(c.VolumeMounts)
	shareRequirements(&c.Resources)
	c.Name = shared(c.Name)
	c.Image = shared(c.Image)
	c.ImagePullPolicy = shared(c.ImagePullPolicy)
	c.TerminationMessagePath = shared(c.TerminationMessagePath)
	c.TerminationMessagePolicy = shared(c.TerminationMessagePolicy)
	c.Env = shareList(envLists, c.Env)
	c.EnvFrom = shareList(envFromLists, c.EnvFrom)
	c.Ports = shareList(portLists, c.Ports)
	c.LivenessProbe = shareValue(probes, c.LivenessProbe)
	c.ReadinessProbe = shareValue(probes, c.ReadinessProbe)
	c.StartupProbe = shareValue(probes, c.StartupProbe)
	c.Lifecycle = shareValue(lifecycles, c.Lifecycle)
	c.SecurityContext = shareValue(securityContexts, c.SecurityContext)
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		m.Name, m.MountPath, m.SubPath = shared(m.Name), shared(m.MountPath), shared(m.SubPath)
	}
}

func compactVolume(v *corev1.Volume) {
	v.Name = shared(v.Name)
	source := &v.VolumeSource
	source.ConfigMap = shareValue(configMapVolumes, source.ConfigMap)
	source.Secret = shareValue(secretVolumes, source.Secret)
	source.PersistentVolumeClaim = shareValue(claimVolumes, source.PersistentVolumeClaim)
	source.EmptyDir = shareValue(emptyDirVolumes, source.EmptyDir)
	source.DownwardAPI = shareValue(downwardAPIVolumes, source.DownwardAPI)
	source.HostPath = shareValue(hostPathVolumes, source.HostPath)
	source.Projected = shareValue(projections, source.Projected)
}

// projections shares projected volumes: the service-account token volume
// that admission gives nearly every pod says the same thing in each (the
// volume's name, which differs, is outside).
var projections = byValue(compactProjection)

// The other parts of a pod that the pods of one workload have in common,
// shared whole: what the apiserver's defaults give every pod (an empty
// security context, a volume source's default mode), and what a workload's
// template repeats (probes, environment, affinity, volume sources). Each
// canonical copy is held once, so only their lists are sized to fit.
var (
	podSecurityContexts = byValue(same[*corev1.PodSecurityContext])
	affinities          = byValue(same[*corev1.Affinity])
	dnsConfigs          = byValue(same[*corev1.PodDNSConfig])
	securityContexts    = byValue(same[*corev1.SecurityContext])
	probes              = byValue(same[*corev1.Probe])
	lifecycles          = byValue(same[*corev1.Lifecycle])
	configMapVolumes    = byValue(same[*corev1.ConfigMapVolumeSource])
	secretVolumes       = byValue(same[*corev1.SecretVolumeSource])
	claimVolumes        = byValue(same[*corev1.PersistentVolumeClaimVolumeSource])
	emptyDirVolumes     = byValue(same[*corev1.EmptyDirVolumeSource])
	downwardAPIVolumes  = byValue(same[*corev1.DownwardAPIVolumeSource])
	hostPathVolumes     = byValue(same[*corev1.HostPathVolumeSource])

	envLists          = byListValue(fit[corev1.EnvVar])
	envFromLists      = byListValue(fit[corev1.EnvFromSource])
	portLists         = byListValue(fit[corev1.ContainerPort])
	spreadConstraints = byListValue(fit[corev1.TopologySpreadConstraint])
)

// conditionLists shares the conditions of pods that say the same, to the
// second (the API keeps no finer times): pods of a rollout or a scale-up
// that changed in the same second, and a physical pod and its virtual pod
// while they list them in the same order. A pod that changed alone keeps
// its own.
var conditionLists = byListValue(compactConditionList)

func compactConditionList(list []corev1.PodCondition) []corev1.PodCondition {
	list = fit(list)
	for i := range list {
		c := &list[i]
		c.Type, c.Status, c.Reason, c.Message = shared(c.Type), shared(c.Status), shared(c.Reason), shared(c.Message)
	}
	return list
}

func compactProjection(projected *corev1.ProjectedVolumeSource) *corev1.ProjectedVolumeSource {
	projected.Sources = fit(projected.Sources)
	for i := range projected.Sources {
		source := &projected.Sources[i]
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
	return projected
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
	s.AllocatedResources = shareResources(s.AllocatedResources)
	shareRequirements(s.Resources)
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

// tolerations shares the tolerations of pods: those admission adds to
// every pod (not-ready and unreachable for 300 s) and those of a workload.
var tolerations = newValues(hashTolerations, equalValues[[]corev1.Toleration], compactTolerations)

func hashTolerations(list []corev1.Toleration) uint64 {
	h := uint64(len(list))
	for _, t := range list {
		h = h*prime64 ^ hashString(t.Key) ^ hashString(t.Value)<<1 ^ hashString(string(t.Effect))<<2 ^ hashString(string(t.Operator))<<3
		if t.TolerationSeconds != nil {
			h ^= uint64(*t.TolerationSeconds) + 1
		}
	}
	return h
}

func compactTolerations(list []corev1.Toleration) []corev1.Toleration {
	list = fit(list)
	for i := range list {
		t := &list[i]
		t.Key, t.Operator, t.Value, t.Effect = shared(t.Key), shared(t.Operator), shared(t.Value), shared(t.Effect)
	}
	return list
}

// resourceLists shares the resource lists (requests, limits, what the
// kubelet reports as allocated) that the containers of one workload have
// in common. Lists count as equal only when they would be written alike:
// the same value in the same format.
var resourceLists = newValues(hashResources, identicalResources, compactResources)

func shareResources(list corev1.ResourceList) corev1.ResourceList {
	if list == nil {
		return nil
	}
	return resourceLists.Of(list)
}

func shareRequirements(r *corev1.ResourceRequirements) {
	if r != nil {
		r.Requests, r.Limits = shareResources(r.Requests), shareResources(r.Limits)
	}
}

func hashResources(list corev1.ResourceList) uint64 {
	h := uint64(len(list))
	for name, q := range list {
		h += hashString(string(name))*prime64 ^ hashString(q.String())
	}
	return h
}

func identicalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, x := range a {
		y, ok := b[name]
		if !ok || x.Format != y.Format || x.Cmp(y) != 0 {
			return false
		}
	}
	return true
}
