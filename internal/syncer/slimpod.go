package syncer

import (
	"reflect"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/intern"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/pod"
)

// The informer transform of the pod caches. A syncer caches each synced
// pod twice, as the virtual pod and as the physical pod made for it, and
// pods of one workload say mostly the same thing: namespace, label keys and
// values, annotation keys, images, container and volume names, mount
// paths, condition types and reasons, node names; most of them carry the
// same labels, probes, environment and volume sources. compactPod shares
// those strings, maps and parts (package intern), sizes the slices that
// decoding grows by doubling to fit, and keeps every field, so nothing
// changes for readers; the controllers write
// pods back from what they read (after a DeepCopy, as cached objects are
// shared and read-only).

// compactPods shares the repeating strings of pods and the labels and
// annotations of any other object a scope holds.
func compactPods(obj any) (any, error) {
	if pod, ok := obj.(*corev1.Pod); ok {
		compactPod(pod)
		return pod, nil
	}
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetLabels(intern.SharedMap(accessor.GetLabels()))
		accessor.SetAnnotations(compactAnnotations(accessor.GetAnnotations()))
	}
	return obj, nil
}

// compactAnnotations shares annotation keys, and the values that repeat
// across objects (among them the physical pod's last-applied state, the
// same for the pods of one workload); the values of the annotations that
// tie one object to its twin (names, UIDs) or time its renewal are its
// own, and stay as decoded.
func compactAnnotations(annotations map[string]string) map[string]string {
	return intern.MapOwn(annotations, ownAnnotation)
}

func ownAnnotation(key string) bool {
	switch key {
	case kubeoceanv1alpha1.AnnotationPhysicalPodName, kubeoceanv1alpha1.AnnotationPhysicalPodUID,
		kubeoceanv1alpha1.AnnotationVirtualPodName, kubeoceanv1alpha1.AnnotationVirtualPodUID,
		kubeoceanv1alpha1.AnnotationPhysicalName, kubeoceanv1alpha1.AnnotationVirtualName,
		kubeoceanv1alpha1.AnnotationLastSyncTime, pod.AnnotationTokenRefreshAt:
		return true
	}
	return false
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

// shared is intern.String for the string types of the API.
func shared[T ~string](s T) T { return T(intern.String(string(s))) }

func compactPod(pod *corev1.Pod) {
	pod.Namespace = shared(pod.Namespace)
	pod.GenerateName = shared(pod.GenerateName)
	pod.Labels = intern.SharedMap(pod.Labels)
	pod.Annotations = compactAnnotations(pod.Annotations)
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
	spec.NodeSelector = intern.SharedMap(spec.NodeSelector)
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

// encoded is a part of an object that the API writes in protobuf.
type encoded interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// byValue shares equal values of T: equal as Go values (so a quantity
// written otherwise is another value), found by what the API writes of
// them.
func byValue[T encoded](canonical func(T) T) *intern.Values[T] {
	return intern.NewValues(hashEncoded[T], equalValues[T], canonical)
}

// byListValue shares equal lists of T; canonical keeps a list in an array
// of its length.
func byListValue[T any, P interface {
	*T
	encoded
}](canonical func([]T) []T) *intern.Values[[]T] {
	hash := func(list []T) uint64 {
		h := uint64(len(list))
		for i := range list {
			h = h*prime64 ^ hashEncoded(P(&list[i]))
		}
		return h
	}
	return intern.NewValues(hash, equalValues[[]T], canonical)
}

// shareValue is the shared value equal to v; nil stays nil.
func shareValue[T any, P interface {
	*T
	encoded
}](values *intern.Values[P], v P) P {
	if v == nil {
		return nil
	}
	return values.Of(v)
}

// shareList is the shared list equal to list; an empty list stays as it
// is.
func shareList[T any](values *intern.Values[[]T], list []T) []T {
	if len(list) == 0 {
		return list
	}
	return values.Of(list)
}

func same[T any](v T) T { return v }

func equalValues[T any](a, b T) bool { return reflect.DeepEqual(a, b) }

// hashEncoded hashes what the API writes of v, encoded into a buffer that
// the next hash reuses: the transform runs for every version of every pod.
func hashEncoded[T encoded](v T) uint64 {
	size := v.Size()
	buffer := encodeBuffers.Get().(*[]byte)
	defer encodeBuffers.Put(buffer)
	if cap(*buffer) < size {
		*buffer = make([]byte, size)
	}
	data := (*buffer)[:size]
	n, err := v.MarshalToSizedBuffer(data)
	if err != nil {
		return 0 // cannot happen for a decoded object; all such share one bucket
	}
	return intern.HashBytes(data[size-n:]) // written from the end
}

var encodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

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
var tolerations = intern.NewValues(hashTolerations, equalValues[[]corev1.Toleration], compactTolerations)

func hashTolerations(list []corev1.Toleration) uint64 {
	h := uint64(len(list))
	for _, t := range list {
		h = h*prime64 ^ intern.Hash(t.Key) ^ intern.Hash(t.Value)<<1 ^ intern.Hash(string(t.Effect))<<2 ^ intern.Hash(string(t.Operator))<<3
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
var resourceLists = intern.NewValues(hashResources, identicalResources, compactResources)

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
		h += intern.Hash(string(name))*prime64 ^ intern.Hash(q.String())
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

// compactPhysical slims the binding's physical pods (slimPhysicalPod),
// shares the repeating strings of them and of the copies beside them, and
// shares the slim container lists, which the pods of one workload have in
// common; it keeps each pod as a physicalPod record.
func compactPhysical(obj any) (any, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return compactPods(obj)
	}
	slimPhysicalPod(pod)
	compactPod(pod)
	pod.Spec.InitContainers = shareContainers(pod.Spec.InitContainers)
	pod.Spec.Containers = shareContainers(pod.Spec.Containers)
	return recordPhysicalPod(pod), nil
}

// slimContainers shares the lists of names and images of slimPhysicalPod.
var slimContainers = intern.NewValues(hashNamesAndImages, sameNamesAndImages, func(c []corev1.Container) []corev1.Container { return c })

func shareContainers(containers []corev1.Container) []corev1.Container {
	if len(containers) == 0 {
		return containers
	}
	return slimContainers.Of(containers)
}

func hashNamesAndImages(containers []corev1.Container) uint64 {
	h := uint64(len(containers))
	for _, c := range containers {
		h = (h*prime64^intern.Hash(c.Name))*prime64 ^ intern.Hash(c.Image)
	}
	return h
}

// prime64 is the 64-bit FNV prime, to combine hashes in order.
const prime64 = 1099511628211

func sameNamesAndImages(a, b []corev1.Container) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Container) bool { return x.Name == y.Name && x.Image == y.Image })
}

// slimPhysicalPod keeps of a physical pod's spec the node, the deadline and
// each container's name and image (nothing else: sameNamesAndImages
// compares only those); metadata and status stay whole.
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
