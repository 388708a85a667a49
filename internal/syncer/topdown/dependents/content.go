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

package dependents

import (
	"bytes"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// ConfigMaps copy data, binaryData and immutable. An immutable copy whose
// content changed is replaced: the API refuses to update it, and a pod
// started after the change must see the new content.
var configMapContent = content[*corev1.ConfigMap]{
	build: func(virtual *corev1.ConfigMap) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			Data:       maps.Clone(virtual.Data),
			BinaryData: cloneBytes(virtual.BinaryData),
			Immutable:  cloneBool(virtual.Immutable),
		}
	},
	differs: func(actual, desired *corev1.ConfigMap) bool {
		return configMapDataDiffers(actual, desired) || isImmutable(actual.Immutable) != isImmutable(desired.Immutable)
	},
	apply: func(actual, desired *corev1.ConfigMap) {
		actual.Data, actual.BinaryData, actual.Immutable = desired.Data, desired.BinaryData, desired.Immutable
	},
	replace: func(actual, desired *corev1.ConfigMap) bool {
		return isImmutable(actual.Immutable) && (configMapDataDiffers(actual, desired) || !isImmutable(desired.Immutable))
	},
}

func configMapDataDiffers(actual, desired *corev1.ConfigMap) bool {
	return !maps.Equal(actual.Data, desired.Data) || !maps.EqualFunc(actual.BinaryData, desired.BinaryData, bytes.Equal)
}

// Secrets copy data, type and immutable. Service-account tokens of the
// virtual cluster are never copied (see ReasonServiceAccountToken). The
// type cannot change in place, so a changed type replaces the copy, as
// does changed content of an immutable copy.
var secretContent = content[*corev1.Secret]{
	build: func(virtual *corev1.Secret) *corev1.Secret {
		return &corev1.Secret{
			Type:      secretType(virtual.Type),
			Data:      cloneBytes(virtual.Data),
			Immutable: cloneBool(virtual.Immutable),
		}
	},
	differs: func(actual, desired *corev1.Secret) bool {
		return secretDataDiffers(actual, desired) || secretType(actual.Type) != secretType(desired.Type) ||
			isImmutable(actual.Immutable) != isImmutable(desired.Immutable)
	},
	apply: func(actual, desired *corev1.Secret) {
		actual.Data, actual.Immutable = desired.Data, desired.Immutable
	},
	replace: func(actual, desired *corev1.Secret) bool {
		if secretType(actual.Type) != secretType(desired.Type) {
			return true
		}
		return isImmutable(actual.Immutable) && (secretDataDiffers(actual, desired) || !isImmutable(desired.Immutable))
	},
	unsupported: func(virtual *corev1.Secret) string {
		if virtual.Type == corev1.SecretTypeServiceAccountToken {
			return ReasonServiceAccountToken
		}
		return ""
	},
}

func secretDataDiffers(actual, desired *corev1.Secret) bool {
	return !maps.EqualFunc(actual.Data, desired.Data, bytes.Equal)
}

// secretType is the type the API server stores for t.
func secretType(t corev1.SecretType) corev1.SecretType {
	if t == "" {
		return corev1.SecretTypeOpaque
	}
	return t
}

func isImmutable(immutable *bool) bool { return ptr.Deref(immutable, false) }

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	return ptr.To(*b)
}

func cloneBytes(in map[string][]byte) map[string][]byte {
	if in == nil {
		return nil
	}
	out := make(map[string][]byte, len(in))
	for k, v := range in {
		out[k] = bytes.Clone(v)
	}
	return out
}
