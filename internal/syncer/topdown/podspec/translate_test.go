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

package podspec

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

func fromTokenSecret(items ...corev1.KeyToPath) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: podidentity.SecretName(physicalName)}, Items: items}}
}

// fullVirtualPod uses every kind of reference a pod can make, the
// admission-injected token volume, a second token, downward-API identity
// fields, and scheduling fields that must not reach the physical cluster.
func fullVirtualPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: virtualNS, Name: virtualName, UID: virtualUID, ResourceVersion: "7",
			Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				"team": "a",
				kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: mountNS,
				kubeoceanv1alpha1.AnnotationPhysicalPodName:      physicalName,
				kubeoceanv1alpha1.AnnotationPhysicalPodUID:       string(physicalUID),
				kubeoceanv1alpha1.AnnotationLastSyncTime:         "2026-01-01T00:00:00Z",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "rs"}},
			Finalizers:      []string{"example.com/keep"},
		},
		Spec: corev1.PodSpec{
			NodeName:                 virtualNode,
			ServiceAccountName:       "builder",
			DeprecatedServiceAccount: "builder",
			SchedulerName:            "default-scheduler",
			NodeSelector:             map[string]string{"zone": "a"},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
			}}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}},
			PriorityClassName:         "high",
			Priority:                  ptr.To[int32](1000),
			PreemptionPolicy:          ptr.To(corev1.PreemptLowerPriority),
			Overhead:                  corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
			Tolerations:               []corev1.Toleration{{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists}},
			ReadinessGates:            []corev1.PodReadinessGate{{ConditionType: "example.com/load-balancer-ready"}},
			ImagePullSecrets:          []corev1.LocalObjectReference{{Name: "regcred"}},
			InitContainers: []corev1.Container{{
				Name: "init", Image: "busybox:1",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-config"}}}},
			}},
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1",
				Env: []corev1.EnvVar{
					podtest.ConfigMapEnv("A", "app-config"), podtest.SecretEnv("B", "app-creds"),
					podtest.FieldEnv("POD_NAME", "metadata.name"), podtest.FieldEnv("POD_NAMESPACE", "metadata.namespace"),
					podtest.FieldEnv("POD_UID", "metadata.uid"), podtest.FieldEnv("NODE_NAME", "spec.nodeName"),
					podtest.FieldEnv("POD_IP", "status.podIP"),
					podtest.FieldEnv("APP", "metadata.labels['app']"), podtest.FieldEnv("TEAM", "metadata.annotations['team']"),
				},
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-env"}}}},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1"}}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "app-creds"}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				podtest.ProjectedVolume("kube-api-access-abcde", ptr.To[int32](0o644),
					corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
					corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: references.RootCAConfigMap},
						Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
					corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				),
				podtest.ProjectedVolume("vault-token", nil,
					corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To[int64](600), Path: "vault-token"}}),
				podtest.ProjectedVolume("bundle", nil,
					corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "bundle-config"}}},
					corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "bundle-secret"}}}),
				{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o600), Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}, Mode: ptr.To[int32](0o400)},
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}},
					{Path: "app", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['app']"}},
				}}}},
				{Name: "applabel", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "app", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['app']"}},
				}}}},
			},
		},
	}
}

var apiServerEnv = []corev1.EnvVar{
	{Name: "KUBERNETES_SERVICE_HOST", Value: "10.0.0.1"},
	{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"},
	{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: "6443"},
}

// fullPhysicalPod is what fullVirtualPod becomes with the virtual API
// server at 10.0.0.1:6443.
func fullPhysicalPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: physicalName,
			Labels: testOwner.Stamp(map[string]string{"label.kubeocean.io/app": "web", kubeoceanv1alpha1.LabelVirtualNamespace: virtualNS}),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualLabels:       `{"app":"web"}`,
				kubeoceanv1alpha1.AnnotationVirtualAnnotations:  `{"team":"a"}`,
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtualNS,
				kubeoceanv1alpha1.AnnotationVirtualPodName:      virtualName,
				kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(virtualUID),
				AnnotationLastApplied: `{"labels":{"kubeocean.io/binding-uid":"binding-uid","kubeocean.io/cluster-id":"c1","kubeocean.io/managed-by":"kubeocean",` +
					`"kubeocean.io/virtual-namespace":"team-a","label.kubeocean.io/app":"web"},` +
					`"annotations":{"kubeocean.io/virtual-annotations":"{\"team\":\"a\"}","kubeocean.io/virtual-labels":"{\"app\":\"web\"}"},` +
					`"images":{"containers/app":"nginx:1","initContainers/init":"busybox:1"}}`,
			},
		},
		Spec: corev1.PodSpec{
			NodeName:                     physicalNode,
			Hostname:                     virtualName,
			SchedulerName:                "default-scheduler",
			AutomountServiceAccountToken: ptr.To(false),
			EnableServiceLinks:           ptr.To(false),
			Tolerations:                  []corev1.Toleration{{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists}},
			ImagePullSecrets:             []corev1.LocalObjectReference{{Name: podtest.PhysicalNameOf("regcred")}},
			InitContainers: []corev1.Container{{
				Name: "init", Image: "busybox:1",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: podtest.PhysicalNameOf("init-config")}}}},
				Env:     apiServerEnv,
			}},
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1",
				Env: append([]corev1.EnvVar{
					podtest.ConfigMapEnv("A", podtest.PhysicalNameOf("app-config")), podtest.SecretEnv("B", podtest.PhysicalNameOf("app-creds")),
					{Name: "POD_NAME", Value: virtualName}, {Name: "POD_NAMESPACE", Value: virtualNS},
					{Name: "POD_UID", Value: string(virtualUID)}, {Name: "NODE_NAME", Value: virtualNode},
					podtest.FieldEnv("POD_IP", "status.podIP"),
					podtest.FieldEnv("APP", "metadata.labels['label.kubeocean.io/app']"),
					{Name: "TEAM", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: podidentity.SecretName(physicalName)}, Key: podidentity.SecretKey("metadata.annotations['team']")}}},
				}, apiServerEnv...),
				EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: podtest.PhysicalNameOf("app-env")}}}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: podtest.PhysicalNameOf("app-config")}}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: podtest.PhysicalNameOf("app-creds")}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: podtest.PhysicalNameOf("data")}}},
				podtest.ProjectedVolume("kube-api-access-abcde", ptr.To[int32](0o644),
					fromTokenSecret(corev1.KeyToPath{Key: "token", Path: "token"}),
					fromTokenSecret(corev1.KeyToPath{Key: "ca.crt", Path: "ca.crt"}),
					fromTokenSecret(corev1.KeyToPath{Key: "metadata.namespace", Path: "namespace"})),
				podtest.ProjectedVolume("vault-token", nil, fromTokenSecret(corev1.KeyToPath{Key: "token-1", Path: "vault-token"})),
				podtest.ProjectedVolume("bundle", nil,
					corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: podtest.PhysicalNameOf("bundle-config")}}},
					corev1.VolumeProjection{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: podtest.PhysicalNameOf("bundle-secret")}}}),
				podtest.ProjectedVolume("podinfo", ptr.To[int32](0o600),
					corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
						{Path: "app", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['label.kubeocean.io/app']"}}}}},
					fromTokenSecret(corev1.KeyToPath{Key: "metadata.name", Path: "name", Mode: ptr.To[int32](0o400)},
						corev1.KeyToPath{Key: "metadata.labels", Path: "labels"})),
				{Name: "applabel", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "app", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['label.kubeocean.io/app']"}},
				}}}},
			},
			HostAliases: []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{
				"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}}},
		},
	}
}

// resolvedNames are the names the dependents library returns for
// fullVirtualPod.
func resolvedNames(pod *corev1.Pod) Names {
	configMaps, secrets, pvcs := podtest.CopiedNames(pod)
	return Names{Namespace: pod.Namespace, ConfigMaps: configMaps, Secrets: secrets, PVCs: pvcs}
}

func TestPhysicalPod(t *testing.T) {
	withoutAPIServer := func(p *corev1.Pod) {
		p.Spec.HostAliases = nil
		p.Spec.InitContainers[0].Env = nil
		c := &p.Spec.Containers[0]
		c.Env = c.Env[:len(c.Env)-len(apiServerEnv)]
	}
	tests := []struct {
		name      string
		apiServer string
		virtual   func(*corev1.Pod)
		want      func(*corev1.Pod)
	}{
		{name: "every kind of reference, API server by IP", apiServer: "10.0.0.1:6443"},
		{name: "no API server address: no env, no host aliases", want: withoutAPIServer},
		{
			name: "API server by name: env, no host aliases", apiServer: "virtual.example.com:443",
			want: func(p *corev1.Pod) {
				withoutAPIServer(p)
				env := []corev1.EnvVar{
					{Name: "KUBERNETES_SERVICE_HOST", Value: "virtual.example.com"},
					{Name: "KUBERNETES_SERVICE_PORT", Value: "443"},
					{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: "443"},
				}
				p.Spec.InitContainers[0].Env = env
				p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, env...)
			},
		},
		{
			name: "a variable the container sets wins", apiServer: "10.0.0.1:6443",
			virtual: func(p *corev1.Pod) {
				p.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"}}
			},
			want: func(p *corev1.Pod) {
				p.Spec.InitContainers[0].Env = append([]corev1.EnvVar{{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"}}, apiServerEnv[1:]...)
			},
		},
		{
			name: "hostname set by the pod is kept", apiServer: "10.0.0.1:6443",
			virtual: func(p *corev1.Pod) { p.Spec.Hostname = "custom" },
			want:    func(p *corev1.Pod) { p.Spec.Hostname = "custom" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			virtual := fullVirtualPod()
			if tt.virtual != nil {
				tt.virtual(virtual)
			}
			want := fullPhysicalPod()
			if tt.want != nil {
				tt.want(want)
			}
			apiServer, err := ParseAPIServer(tt.apiServer)
			if err != nil {
				t.Fatal(err)
			}
			before := virtual.DeepCopy()
			got := PhysicalPod(virtual, Translation{Owner: testOwner,
				MountNamespace: mountNS, PhysicalName: physicalName, PhysicalNode: physicalNode,
				Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual), APIServer: apiServer,
			})
			if !equality.Semantic.DeepEqual(want, got) {
				t.Errorf("physical pod (-want +got):\n%s", diff.Diff(want, got))
			}
			if !equality.Semantic.DeepEqual(before, virtual) {
				t.Errorf("virtual pod was modified (-before +after):\n%s", diff.Diff(before, virtual))
			}
		})
	}
}

func TestPhysicalPodHostnameNotALabel(t *testing.T) {
	virtual := podtest.BoundPod()
	virtual.Name = "web.v1"
	got := PhysicalPod(virtual, Translation{MountNamespace: mountNS, PhysicalName: "x", PhysicalNode: physicalNode})
	if got.Spec.Hostname != "" {
		t.Errorf("hostname = %q, want none for a name that is no DNS label", got.Spec.Hostname)
	}
}

func TestDependencyReferences(t *testing.T) {
	pod := fullVirtualPod()
	// A kube-root-ca.crt the pod mounts on its own is copied like any
	// ConfigMap; the one next to the token is served by the token Secret.
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "ca", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: references.RootCAConfigMap}}}})
	refs := references.Copied(pod)
	if want := []string{"app-config", "bundle-config", "init-config", references.RootCAConfigMap}; !slices.Equal(refs.ConfigMaps, want) {
		t.Errorf("ConfigMaps = %v, want %v", refs.ConfigMaps, want)
	}
	if want := []string{"app-creds", "app-env", "bundle-secret", "regcred"}; !slices.Equal(refs.Secrets, want) {
		t.Errorf("Secrets = %v, want %v", refs.Secrets, want)
	}
	if want := []string{"data"}; !slices.Equal(refs.PVCs, want) {
		t.Errorf("PVCs = %v, want %v", refs.PVCs, want)
	}

	without := fullVirtualPod()
	without.Spec.Volumes = without.Spec.Volumes[:3]
	if refs := references.Copied(without); slices.Equal(refs.ConfigMaps, []string{references.RootCAConfigMap}) {
		t.Errorf("kube-root-ca.crt listed without a volume using it")
	}
}

func TestParseAPIServer(t *testing.T) {
	tests := []struct {
		in      string
		want    *APIServer
		wantErr bool
	}{
		{in: "", want: nil},
		{in: "10.1.2.3:6443", want: &APIServer{host: "10.1.2.3", port: "6443", ip: "10.1.2.3"}},
		{in: "[fd00::1]:443", want: &APIServer{host: "fd00::1", port: "443", ip: "fd00::1"}},
		{in: "api.example.com:443", want: &APIServer{host: "api.example.com", port: "443"}},
		{in: "api.example.com", wantErr: true},
		{in: "api.example.com:http", wantErr: true},
		{in: ":443", wantErr: true},
		{in: "host:70000", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseAPIServer(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseAPIServer(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseAPIServer(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}
