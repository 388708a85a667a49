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
	"bytes"
	"strings"
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// testTransforms are the transforms as the syncer makes them (scopes.go),
// with the annotations that tie an object to its twin or time its renewal
// kept as each object's own.
var testTransforms = NewTransforms(
	kubeoceanv1alpha1.AnnotationPhysicalPodName, kubeoceanv1alpha1.AnnotationPhysicalPodUID,
	kubeoceanv1alpha1.AnnotationVirtualPodName, kubeoceanv1alpha1.AnnotationVirtualPodUID,
	kubeoceanv1alpha1.AnnotationPhysicalName, kubeoceanv1alpha1.AnnotationVirtualName,
	kubeoceanv1alpha1.AnnotationLastSyncTime, kubeoceanv1alpha1.AnnotationTokenRefreshAt,
)

// realisticPod is a pod of a Deployment as the apiserver stores it once
// it runs: a service-account token, a ConfigMap and a Secret, a few
// environment variables, probes' worth of fields, a running status.
func realisticPod(name string) *corev1.Pod {
	now := metav1.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	condition := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: name, GenerateName: "web-7d9c6b5f4-", UID: types.UID("uid-" + name), ResourceVersion: "123456",
			CreationTimestamp: now,
			Labels:            map[string]string{"app": "web", "pod-template-hash": "7d9c6b5f4", "tier": "frontend"},
			Annotations: map[string]string{
				"kubeocean.io/physical-pod-namespace": "kubeocean-worker", "kubeocean.io/physical-pod-name": name + "-0123456789abcdef",
				"kubeocean.io/physical-pod-uid": "physical-" + name, "kubeocean.io/last-sync-time": "2026-11-27T12:00:00Z",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9c6b5f4",
				UID: "rs-uid", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			NodeName: "vnode-c1-worker-0007", ServiceAccountName: "default", DeprecatedServiceAccount: "default",
			SchedulerName: "default-scheduler", RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst,
			PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority), Priority: ptr.To[int32](0), EnableServiceLinks: ptr.To(true),
			TerminationGracePeriodSeconds: ptr.To[int64](30), SecurityContext: &corev1.PodSecurityContext{},
			Tolerations: []corev1.Toleration{
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			},
			Containers: []corev1.Container{{
				Name: "web", Image: "registry.example/shop/web:1.42.0", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-secret"}}},
				},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
					PeriodSeconds: 10, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"},
					{Name: "settings", ReadOnly: true, MountPath: "/etc/web"}},
			}},
			Volumes: []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "web-settings"}, DefaultMode: ptr.To[int32](0o644)}}},
				{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
					DefaultMode: ptr.To[int32](0o644),
					Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
							Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
							FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
					},
				}}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, HostIP: "10.0.1.17", HostIPs: []corev1.HostIP{{IP: "10.0.1.17"}},
			PodIP: "10.244.7.12", PodIPs: []corev1.PodIP{{IP: "10.244.7.12"}}, StartTime: &now,
			Conditions: []corev1.PodCondition{condition(corev1.PodReadyToStartContainers), condition(corev1.PodInitialized),
				condition(corev1.PodReady), condition(corev1.ContainersReady), condition(corev1.PodScheduled)},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true, Started: ptr.To(true),
				Image: "registry.example/shop/web:1.42.0", ImageID: "registry.example/shop/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				ContainerID: "containerd://" + strings.Repeat("ab", 32), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}},
		},
	}
}

// decodedPod is realisticPod as an informer receives it: every string its
// own copy.
func decodedPod(t testing.TB, name string) *corev1.Pod {
	t.Helper()
	data, err := realisticPod(name).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := pod.Unmarshal(data); err != nil {
		t.Fatal(err)
	}
	return pod
}

func TestPodsKeepsEveryField(t *testing.T) {
	pod := decodedPod(t, "web-7d9c6b5f4-abcde")
	obj, err := testTransforms.Pods(pod.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	got := obj.(*corev1.Pod)
	if !equality.Semantic.DeepEqual(got, pod) {
		t.Fatalf("testTransforms.Pods changed the pod:\n%+v\nwant\n%+v", got, pod)
	}
	other, _ := testTransforms.Pods(decodedPod(t, "web-7d9c6b5f4-fghij"))
	b := other.(*corev1.Pod)
	for what, pair := range map[string][2]string{
		"namespace":        {got.Namespace, b.Namespace},
		"label value":      {got.Labels["app"], b.Labels["app"]},
		"image":            {got.Spec.Containers[0].Image, b.Spec.Containers[0].Image},
		"mount path":       {got.Spec.Containers[0].VolumeMounts[0].MountPath, b.Spec.Containers[0].VolumeMounts[0].MountPath},
		"image ID":         {got.Status.ContainerStatuses[0].ImageID, b.Status.ContainerStatuses[0].ImageID},
		"condition type":   {string(got.Status.Conditions[0].Type), string(b.Status.Conditions[0].Type)},
		"toleration key":   {got.Spec.Tolerations[0].Key, b.Spec.Tolerations[0].Key},
		"owner's name":     {got.OwnerReferences[0].Name, b.OwnerReferences[0].Name},
		"projected source": {got.Spec.Volumes[1].Projected.Sources[1].ConfigMap.Name, b.Spec.Volumes[1].Projected.Sources[1].ConfigMap.Name},
	} {
		if !sameMemory(pair[0], pair[1]) {
			t.Errorf("the %s two pods have in common is not shared", what)
		}
	}

	if !sameMap(got.Labels, b.Labels) || !sameMap(got.Spec.Containers[0].Resources.Requests, b.Spec.Containers[0].Resources.Requests) {
		t.Error("the labels or requests two pods have in common are not one map")
	}
	if got.Spec.Volumes[1].Projected != b.Spec.Volumes[1].Projected || unsafe.SliceData(got.Spec.Tolerations) != unsafe.SliceData(b.Spec.Tolerations) {
		t.Error("the token volume's projection or the tolerations two pods have in common are not shared")
	}
	gotC, bC := got.Spec.Containers[0], b.Spec.Containers[0]
	for what, same := range map[string]bool{
		"pod security context": got.Spec.SecurityContext == b.Spec.SecurityContext,
		"readiness probe":      gotC.ReadinessProbe == bC.ReadinessProbe,
		"environment":          unsafe.SliceData(gotC.Env) == unsafe.SliceData(bC.Env),
		"environment sources":  unsafe.SliceData(gotC.EnvFrom) == unsafe.SliceData(bC.EnvFrom),
		"ports":                unsafe.SliceData(gotC.Ports) == unsafe.SliceData(bC.Ports),
		"ConfigMap volume":     got.Spec.Volumes[0].ConfigMap == b.Spec.Volumes[0].ConfigMap,
		"conditions":           unsafe.SliceData(got.Status.Conditions) == unsafe.SliceData(b.Status.Conditions),
	} {
		if !same {
			t.Errorf("the %s two pods have in common is not shared", what)
		}
	}
	// What differs stays each pod's own, and reads as decoded.
	probed := decodedPod(t, "web-7d9c6b5f4-probe")
	probed.Spec.Containers[0].ReadinessProbe.PeriodSeconds = 5
	probed.Spec.Containers[0].Env[0].Value = "debug"
	probed.Spec.Volumes[0].ConfigMap.DefaultMode = ptr.To[int32](0o600)
	probed.Status.Conditions[2].LastTransitionTime.Time = probed.Status.Conditions[2].LastTransitionTime.Add(time.Second)
	wantProbed := probed.DeepCopy()
	testTransforms.Pods(probed)
	probedC := probed.Spec.Containers[0]
	if !equality.Semantic.DeepEqual(probed, wantProbed) || probedC.ReadinessProbe == gotC.ReadinessProbe ||
		unsafe.SliceData(probedC.Env) == unsafe.SliceData(gotC.Env) || probed.Spec.Volumes[0].ConfigMap == got.Spec.Volumes[0].ConfigMap ||
		unsafe.SliceData(probed.Status.Conditions) == unsafe.SliceData(got.Status.Conditions) {
		t.Errorf("a pod with another probe, environment, volume mode and readiness time got those of the first: %+v, %+v, %+v, %+v",
			probedC.ReadinessProbe, probedC.Env, probed.Spec.Volumes[0].ConfigMap, probed.Status.Conditions)
	}
	if unsafe.SliceData(probedC.EnvFrom) != unsafe.SliceData(gotC.EnvFrom) {
		t.Error("the environment sources the third pod has in common with the first are not shared")
	}

	longer := decodedPod(t, "web-7d9c6b5f4-uvwxy")
	longer.Spec.Tolerations[1].TolerationSeconds = ptr.To[int64](600)
	longer.Spec.Volumes[1].Projected.Sources[0].ServiceAccountToken.ExpirationSeconds = ptr.To[int64](7200)
	want := longer.DeepCopy()
	testTransforms.Pods(longer)
	if !equality.Semantic.DeepEqual(longer, want) || unsafe.SliceData(longer.Spec.Tolerations) == unsafe.SliceData(got.Spec.Tolerations) ||
		longer.Spec.Volumes[1].Projected == got.Spec.Volumes[1].Projected {
		t.Errorf("a pod with other tolerations and token lifetime got those of the first: %+v, %+v",
			longer.Spec.Tolerations, longer.Spec.Volumes[1].Projected.Sources[0])
	}
	if conditions := got.Status.Conditions; cap(conditions) != len(conditions) {
		t.Errorf("conditions kept in an array of %d for %d", cap(conditions), len(conditions))
	}

	// Resource lists are shared only when they are written alike: the same
	// quantity in other words is another list.
	for _, cpu := range []string{"1", "1000m", "1k", "1e3"} {
		p := decodedPod(t, "web-7d9c6b5f4-"+cpu)
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		data, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		compacted, _ := testTransforms.Pods(p)
		again, err := compacted.(*corev1.Pod).Marshal()
		if err != nil || !bytes.Equal(again, data) {
			t.Errorf("the pod with a CPU limit of %s is written otherwise once compacted (%v)", cpu, err)
		}
	}

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "m", Name: "copy", Labels: map[string]string{"a": strings.Clone("b")}},
		Data: map[string][]byte{"k": []byte("v")}}
	kept, err := testTransforms.Pods(secret.DeepCopy())
	if err != nil || !equality.Semantic.DeepEqual(kept, secret) {
		t.Fatalf("testTransforms.Pods changed a Secret: %+v, %v", kept, err)
	}
}

// The physical pod cache keeps of the spec the node, the deadline and each
// container's name and image (what merge.go, ephemeral.go and the kubelet
// API read), and metadata and status whole, in a record whose Pod says
// that.
func TestPhysicalKeepsWhatTheControllersRead(t *testing.T) {
	decoded := decodedPod(t, "web-7d9c6b5f4-abcde")
	decoded.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
	decoded.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1", Command: []string{"true"}}}
	decoded.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", Stdin: true, TTY: true}}}
	obj, err := testTransforms.Physical(decoded.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	record, ok := obj.(*PhysicalPod)
	if !ok {
		t.Fatalf("the cache keeps a %T", obj)
	}
	got := record.Pod()
	if !equality.Semantic.DeepEqual(got.ObjectMeta, decoded.ObjectMeta) || !equality.Semantic.DeepEqual(got.Status, decoded.Status) {
		t.Fatalf("metadata or status changed:\n%+v\nwant\n%+v", got, decoded)
	}
	want := corev1.PodSpec{
		NodeName:              decoded.Spec.NodeName,
		ActiveDeadlineSeconds: ptr.To[int64](600),
		InitContainers:        []corev1.Container{{Name: "init", Image: "registry.example/init:1"}},
		Containers:            []corev1.Container{{Name: "web", Image: "registry.example/shop/web:1.42.0"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: "busybox"}}},
	}
	if !equality.Semantic.DeepEqual(got.Spec, want) {
		t.Fatalf("spec kept:\n%+v\nwant\n%+v", got.Spec, want)
	}
	other, _ := testTransforms.Physical(decodedPod(t, "web-7d9c6b5f4-fghij"))
	if !sameMemory(got.Spec.Containers[0].Image, other.(*PhysicalPod).Spec.Containers[0].Image) {
		t.Error("the image two physical pods have in common is not shared")
	}
	// The pods of one workload record one last-applied state: one copy.
	applied := `{"labels":{"app":"web"},"images":{"containers/web":"registry.example/shop/web:1.42.0"}}`
	one, two := decodedPod(t, "web-7d9c6b5f4-uvwxy"), decodedPod(t, "web-7d9c6b5f4-zabcd")
	one.Annotations[kubeoceanv1alpha1.AnnotationLastApplied], two.Annotations[kubeoceanv1alpha1.AnnotationLastApplied] = strings.Clone(applied), strings.Clone(applied)
	first, _ := testTransforms.Physical(one)
	second, _ := testTransforms.Physical(two)
	if !sameMemory(first.(*PhysicalPod).Annotations[kubeoceanv1alpha1.AnnotationLastApplied], second.(*PhysicalPod).Annotations[kubeoceanv1alpha1.AnnotationLastApplied]) {
		t.Error("the last-applied state two physical pods have in common is not shared")
	}
	third := decodedPod(t, "web-7d9c6b5f4-klmno")
	third.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1"}}
	kept, _ := testTransforms.Physical(third)
	if spec := kept.(*PhysicalPod).Spec; unsafe.SliceData(spec.Containers) != unsafe.SliceData(got.Spec.Containers) ||
		unsafe.SliceData(spec.InitContainers) != unsafe.SliceData(got.Spec.InitContainers) {
		t.Error("the containers' names and images two physical pods have in common are not one list")
	}
	third = decodedPod(t, "web-7d9c6b5f4-pqrst")
	third.Spec.Containers[0].Image = "registry.example/shop/web:1.43.0"
	kept, _ = testTransforms.Physical(third)
	if containers := kept.(*PhysicalPod).Spec.Containers; unsafe.SliceData(containers) == unsafe.SliceData(got.Spec.Containers) || containers[0].Image != "registry.example/shop/web:1.43.0" {
		t.Errorf("a pod with another image got the list of the first: %+v", containers)
	}
}
