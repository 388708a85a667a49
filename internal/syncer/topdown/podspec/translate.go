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
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

// Names maps the names of the ConfigMaps, Secrets and PVCs a
// virtual pod uses to the names of their physical copies.
type Names struct {
	// Namespace is the virtual pod's.
	Namespace                 string
	ConfigMaps, Secrets, PVCs map[string]string
}

func (n Names) lookup(names map[string]string, name string) string {
	if physical := names[name]; physical != "" {
		return physical
	}
	// Not resolved (an optional reference to an object that does not
	// exist): the name a copy would get, which the kubelet finds missing
	// and tolerates.
	return kubeoceanv1alpha1.PhysicalName(n.Namespace, name)
}

func (n Names) configMap(name string) string { return n.lookup(n.ConfigMaps, name) }
func (n Names) secret(name string) string    { return n.lookup(n.Secrets, name) }
func (n Names) pvc(name string) string       { return n.lookup(n.PVCs, name) }

// Translation is what turning a virtual pod into its physical pod needs
// beyond the virtual pod itself.
type Translation struct {
	MountNamespace string
	Owner          ownership.Owner
	PhysicalName   string
	PhysicalNode   string
	Names          Names
	Plan           podidentity.Plan
	// APIServer, when set, is where the pod reaches the virtual API
	// server.
	APIServer *APIServer
	// Allowed is what the lender lets through (label and annotation keys
	// as they are); the zero Set lets nothing.
	Allowed allowances.Set
	// Network is the binding's DNS and Service mirrors; nil leaves the
	// pod's resolver and environment as they are.
	Network *NetworkView
}

// PhysicalPod is the physical pod for virtual: pinned to the physical node,
// every reference renamed to the physical copy, the identity the pod sees
// (and the labels and annotations it reads) served from its token Secret,
// its labels and annotations in Kubeocean's form (DesiredState), and
// scheduling fields dropped, because the pod is already placed and the
// physical cluster's scheduler and priority classes know nothing of the
// virtual ones. A runtime class is kept: specNotAllowed refuses the pods
// whose runtime class the lender does not allow.
func PhysicalPod(virtual *corev1.Pod, t Translation) *corev1.Pod {
	state := DesiredState(virtual, t.Owner, t.Allowed)
	annotations := maps.Clone(state.Annotations)
	annotations[AnnotationLastApplied] = state.encode()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   t.MountNamespace,
			Name:        t.PhysicalName,
			Labels:      maps.Clone(state.Labels),
			Annotations: annotations,
		},
		Spec: *virtual.Spec.DeepCopy(),
	}
	spec := &pod.Spec
	spec.NodeName = t.PhysicalNode
	spec.NodeSelector, spec.Affinity, spec.TopologySpreadConstraints, spec.SchedulingGates = nil, nil, nil, nil
	// The physical cluster computes these from its own classes; a copied
	// value would be rejected by its admission or mean something else.
	spec.Priority, spec.PriorityClassName, spec.PreemptionPolicy, spec.Overhead = nil, "", nil, nil
	// The API rejects ephemeral containers on create.
	spec.EphemeralContainers = nil
	// Controllers of the virtual cluster set readiness-gate conditions on
	// the virtual pod; on the physical pod nobody would, and it would
	// never become Ready.
	spec.ReadinessGates = nil
	// The pod gets the virtual cluster's token from us; a token of the
	// physical cluster would give it access there instead.
	spec.ServiceAccountName, spec.DeprecatedServiceAccount = "", ""
	spec.AutomountServiceAccountToken = ptr.To(false)
	// Services of the mount namespace are not the pod's services.
	spec.EnableServiceLinks = ptr.To(false)
	// The hostname would otherwise be the physical name.
	if spec.Hostname == "" && len(validation.IsDNS1123Label(virtual.Name)) == 0 {
		spec.Hostname = virtual.Name
	}
	t.Network.applyNetwork(spec, virtual)

	t.rewriteVolumes(spec.Volumes)
	for _, c := range references.AllContainers(spec) {
		t.RewriteContainer(c, virtual)
	}
	for i := range spec.ImagePullSecrets {
		spec.ImagePullSecrets[i].Name = t.Names.secret(spec.ImagePullSecrets[i].Name)
	}
	if t.APIServer != nil && t.APIServer.ip != "" {
		spec.HostAliases = append(spec.HostAliases, corev1.HostAlias{
			IP:        t.APIServer.ip,
			Hostnames: []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		})
	}
	return pod
}

func (t Translation) tokenSecret() string { return podidentity.SecretName(t.PhysicalName) }

func (t Translation) rewriteVolumes(volumes []corev1.Volume) {
	for i := range volumes {
		v := &volumes[i]
		switch {
		case v.ConfigMap != nil:
			v.ConfigMap.Name = t.Names.configMap(v.ConfigMap.Name)
		case v.Secret != nil:
			v.Secret.SecretName = t.Names.secret(v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			v.PersistentVolumeClaim.ClaimName = t.Names.pvc(v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			v.Projected.Sources = t.projectedSources(v.Projected)
		case v.DownwardAPI != nil && hasIdentityItems(v.DownwardAPI.Items):
			// A downward-API volume cannot hold literal values: it
			// becomes a projection of the same files, the identity ones
			// from the token Secret.
			v.VolumeSource = corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				DefaultMode: v.DownwardAPI.DefaultMode,
				Sources:     t.downwardAPISources(v.DownwardAPI.Items),
			}}
		case v.DownwardAPI != nil:
			rewriteLabelItems(v.DownwardAPI.Items)
		default:
			if ref := references.VolumeSecret(&v.VolumeSource); ref != nil {
				*ref = t.Names.secret(*ref)
			}
		}
	}
}

func (t Translation) projectedSources(projected *corev1.ProjectedVolumeSource) []corev1.VolumeProjection {
	withToken := podidentity.ProjectsToken(projected)
	out := make([]corev1.VolumeProjection, 0, len(projected.Sources))
	for _, source := range projected.Sources {
		switch {
		case source.ServiceAccountToken != nil:
			out = append(out, t.secretProjection(nil, corev1.KeyToPath{
				Key: t.Plan.TokenKey(source.ServiceAccountToken), Path: source.ServiceAccountToken.Path,
			}))
		case withToken && podidentity.IsRootCA(source.ConfigMap):
			out = append(out, t.rootCAProjection(source.ConfigMap))
		case source.ConfigMap != nil:
			source.ConfigMap.Name = t.Names.configMap(source.ConfigMap.Name)
			out = append(out, source)
		case source.Secret != nil:
			source.Secret.Name = t.Names.secret(source.Secret.Name)
			out = append(out, source)
		case source.DownwardAPI != nil:
			out = append(out, t.downwardAPISources(source.DownwardAPI.Items)...)
		default:
			out = append(out, source)
		}
	}
	return out
}

// rootCAProjection serves the virtual cluster's CA, projected from
// kube-root-ca.crt, from the token Secret.
func (t Translation) rootCAProjection(source *corev1.ConfigMapProjection) corev1.VolumeProjection {
	var items []corev1.KeyToPath
	for _, item := range source.Items {
		if item.Key == podidentity.KeyCACert {
			items = append(items, item)
		}
	}
	if len(source.Items) == 0 {
		items = []corev1.KeyToPath{{Key: podidentity.KeyCACert, Path: podidentity.KeyCACert}}
	}
	return t.secretProjection(source.Optional, items...)
}

// downwardAPISources keeps the downward-API items the physical kubelet can
// answer truthfully and serves the identity ones from the token Secret.
func (t Translation) downwardAPISources(items []corev1.DownwardAPIVolumeFile) []corev1.VolumeProjection {
	var kept []corev1.DownwardAPIVolumeFile
	var fromSecret []corev1.KeyToPath
	for _, item := range items {
		if item.FieldRef != nil && podidentity.ServedFromSecret(item.FieldRef.FieldPath) {
			fromSecret = append(fromSecret, corev1.KeyToPath{Key: podidentity.SecretKey(item.FieldRef.FieldPath), Path: item.Path, Mode: item.Mode})
			continue
		}
		kept = append(kept, item)
	}
	rewriteLabelItems(kept)
	var out []corev1.VolumeProjection
	if len(kept) > 0 {
		out = append(out, corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: kept}})
	}
	if len(fromSecret) > 0 {
		out = append(out, t.secretProjection(nil, fromSecret...))
	}
	return out
}

func (t Translation) secretProjection(optional *bool, items ...corev1.KeyToPath) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: t.tokenSecret()},
		Items:                items,
		Optional:             optional,
	}}
}

func hasIdentityItems(items []corev1.DownwardAPIVolumeFile) bool {
	for _, item := range items {
		if item.FieldRef != nil && podidentity.ServedFromSecret(item.FieldRef.FieldPath) {
			return true
		}
	}
	return false
}

// rewriteLabelItems points the items that read one label at its
// translated form, which holds the same value.
func rewriteLabelItems(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if ref := items[i].FieldRef; ref != nil {
			if path, ok := podidentity.PhysicalLabelPath(ref.FieldPath); ok {
				ref.FieldPath = path
			}
		}
	}
}

// RewriteContainer points c's references at the physical copies and
// serves the identity it reads from the token Secret, as PhysicalPod does
// for every container; ephemeral containers added later go through it too.
func (t Translation) RewriteContainer(c *corev1.Container, virtual *corev1.Pod) {
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		switch {
		case from == nil:
		case from.ConfigMapKeyRef != nil:
			from.ConfigMapKeyRef.Name = t.Names.configMap(from.ConfigMapKeyRef.Name)
		case from.SecretKeyRef != nil:
			from.SecretKeyRef.Name = t.Names.secret(from.SecretKeyRef.Name)
		case from.FieldRef != nil && podidentity.IsIdentityField(from.FieldRef.FieldPath):
			c.Env[i].Value = podidentity.Value(virtual, from.FieldRef.FieldPath)
			c.Env[i].ValueFrom = nil
		case from.FieldRef != nil && podidentity.MetadataFromSecretInEnv(from.FieldRef.FieldPath):
			// Not a literal: read when the container starts, as the
			// kubelet reads an annotation.
			c.Env[i].ValueFrom = &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: t.tokenSecret()},
				Key:                  podidentity.SecretKey(from.FieldRef.FieldPath),
			}}
		case from.FieldRef != nil:
			if path, ok := podidentity.PhysicalLabelPath(from.FieldRef.FieldPath); ok {
				from.FieldRef.FieldPath = path
			}
		}
	}
	for i := range c.EnvFrom {
		from := &c.EnvFrom[i]
		if from.ConfigMapRef != nil {
			from.ConfigMapRef.Name = t.Names.configMap(from.ConfigMapRef.Name)
		}
		if from.SecretRef != nil {
			from.SecretRef.Name = t.Names.secret(from.SecretRef.Name)
		}
	}
	if t.APIServer != nil {
		// A variable the container sets itself wins, as it would over the
		// kubelet's.
		for _, env := range []corev1.EnvVar{
			{Name: "KUBERNETES_SERVICE_HOST", Value: t.APIServer.host},
			{Name: "KUBERNETES_SERVICE_PORT", Value: t.APIServer.port},
			{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: t.APIServer.port},
		} {
			if !hasEnv(c.Env, env.Name) {
				c.Env = append(c.Env, env)
			}
		}
	}
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}
