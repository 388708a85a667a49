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

package podidentity

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

const (
	// rootCAConfigMap is the ConfigMap the virtual cluster publishes its CA
	// in, in every namespace; KeyCACert its key.
	rootCAConfigMap = references.RootCAConfigMap
	KeyCACert       = "ca.crt"
	// keyToken is the Secret key of a pod's first token.
	keyToken = "token"

	// maxTokenExpirationSeconds bounds the lifetime of the tokens copied
	// into physical Secrets, where whoever may read Secrets in the mount
	// namespace can use them until they expire: an hour, the API's default
	// for a projected token. It also keeps the copy from asking for 3607 s,
	// the lifetime that the service-account admission gives the
	// kube-api-access volume, which the virtual apiserver (with its default
	// --service-account-extend-token-expiration) answers with a token that
	// lives a year, because it trusts a kubelet to renew it hourly anyway.
	maxTokenExpirationSeconds int64 = 3600
)

// identityFields are the downward-API fields whose physical values would
// tell the pod its physical identity; they answer the virtual ones.
// spec.serviceAccountName is one (the API takes it in env only): the
// physical pod runs as a service account of the mount namespace, not as
// the virtual pod's.
var identityFields = []string{"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName"}

func IsIdentityField(fieldPath string) bool { return slices.Contains(identityFields, fieldPath) }

// ServedFromSecret tells the downward-API fields a volume reads from the
// token Secret: the identity fields, and the labels and annotations (see
// metadataField).
func ServedFromSecret(fieldPath string) bool {
	return IsIdentityField(fieldPath) || metadataField(fieldPath)
}

// Value is what fieldPath answers for the virtual pod.
func Value(pod *corev1.Pod, fieldPath string) string {
	if metadataField(fieldPath) {
		return metadataValue(pod, fieldPath)
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name
	case "metadata.namespace":
		return pod.Namespace
	case "metadata.uid":
		return string(pod.UID)
	case "spec.nodeName":
		return pod.Spec.NodeName
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName
	}
	return ""
}

// tokenSpec is one service-account token a pod mounts.
type tokenSpec struct {
	key               string
	audience          string
	expirationSeconds int64
}

// Plan is what a pod's token Secret must hold.
type Plan struct {
	tokens []tokenSpec
	// caCert: the pod mounts the virtual cluster's CA next to a token.
	caCert bool
	// fields are the fields served from the Secret, sorted: identity
	// fields mounted through volumes, labels and annotations mounted or
	// read in env. Their Secret keys are SecretKey(field).
	fields []string
}

func (p Plan) Empty() bool {
	return len(p.tokens) == 0 && !p.caCert && len(p.fields) == 0
}

// TokenKey is the Secret key of the token source, which the plan holds.
func (p Plan) TokenKey(source *corev1.ServiceAccountTokenProjection) string {
	audience, expiration := tokenParameters(source)
	for _, t := range p.tokens {
		if t.audience == audience && t.expirationSeconds == expiration {
			return t.key
		}
	}
	return keyToken
}

func tokenParameters(source *corev1.ServiceAccountTokenProjection) (string, int64) {
	expiration := maxTokenExpirationSeconds
	if source.ExpirationSeconds != nil {
		expiration = min(*source.ExpirationSeconds, maxTokenExpirationSeconds)
	}
	return source.Audience, expiration
}

// PlanFor lists what the physical pod will mount from its token
// Secret: one token per distinct audience and lifetime among the projected
// serviceAccountToken sources, the CA when kube-root-ca.crt is projected
// next to a token (as in the kube-api-access volume admission adds), and
// every identity field of a downward-API volume or projection.
func PlanFor(pod *corev1.Pod) Plan {
	var plan Plan
	fields := map[string]bool{}
	addFields := func(items []corev1.DownwardAPIVolumeFile) {
		for _, item := range items {
			if item.FieldRef != nil && ServedFromSecret(item.FieldRef.FieldPath) {
				fields[item.FieldRef.FieldPath] = true
			}
		}
	}
	for _, c := range references.AllContainers(&pod.Spec) {
		for _, env := range c.Env {
			if path := envFieldPath(env); MetadataFromSecretInEnv(path) {
				fields[path] = true
			}
		}
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.DownwardAPI != nil:
			addFields(v.DownwardAPI.Items)
		case v.Projected != nil:
			withToken := ProjectsToken(v.Projected)
			for _, source := range v.Projected.Sources {
				switch {
				case source.ServiceAccountToken != nil:
					plan.addToken(source.ServiceAccountToken)
				case source.DownwardAPI != nil:
					addFields(source.DownwardAPI.Items)
				case withToken && IsRootCA(source.ConfigMap):
					plan.caCert = true
				}
			}
		}
	}
	plan.fields = slices.Sorted(maps.Keys(fields))
	return plan
}

func (p *Plan) addToken(source *corev1.ServiceAccountTokenProjection) {
	audience, expiration := tokenParameters(source)
	for _, t := range p.tokens {
		if t.audience == audience && t.expirationSeconds == expiration {
			return
		}
	}
	key := keyToken
	if n := len(p.tokens); n > 0 {
		key += "-" + strconv.Itoa(n)
	}
	p.tokens = append(p.tokens, tokenSpec{key: key, audience: audience, expirationSeconds: expiration})
}

// ProjectsToken tells a projected volume that mounts a service-account
// token, next to which kube-root-ca.crt is served from the token Secret.
func ProjectsToken(projected *corev1.ProjectedVolumeSource) bool {
	for _, source := range projected.Sources {
		if source.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// IsRootCA tells the kube-root-ca.crt projection served from the token
// Secret instead of being copied like other ConfigMaps.
func IsRootCA(source *corev1.ConfigMapProjection) bool {
	return source != nil && source.Name == rootCAConfigMap
}

// SecretName is the name of the token Secret of the physical pod
// physicalPodName. The suffix keeps it apart from the copies of virtual
// Secrets, whose names end in a hash.
func SecretName(physicalPodName string) string { return physicalPodName + "-token" }
