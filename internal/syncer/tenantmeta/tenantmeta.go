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

// Package tenantmeta is the form in which the labels and annotations a
// tenant of the virtual cluster writes on a pod reach its physical pod.
//
// Under their own keys they would be acted on by the physical cluster: a
// label app=monitoring puts the pod in a NetworkPolicy written for the
// physical cluster's monitoring, k8s.v1.cni.cncf.io/networks attaches it to
// another network, cni.projectcalico.org/ipAddrs picks its IP. So:
//
//   - every tenant label is carried under a key of Kubeocean's own domain,
//     LabelKey(key), with its value unchanged: readable when it fits
//     ("app" → "label.kubeocean.io/app", "app.kubernetes.io/name" →
//     "label.kubeocean.io/app.kubernetes.io_name"), hashed when it does not
//     ("label-hash.kubeocean.io/<sha256 prefix>");
//   - tenant annotations are carried only inside one JSON annotation,
//     kubeoceanv1alpha1.AnnotationVirtualAnnotations, and the original labels in another,
//     kubeoceanv1alpha1.AnnotationVirtualLabels, so that every original stays readable;
//   - keys that the lender allows (ResourceLeasingPolicy.spec.allowances)
//     are carried as they are as well; a key of Kubeocean's domain never is.
//
// The translation is deterministic and depends on nothing but the key, so
// anything that selects the binding's physical pods by a tenant's labels
// (the Service mirror: Selector, LabelSelector, PodSelector) translates the
// selector the same way, whatever the allowances were when the pod was made.
//
// A tenant's own keys under kubeocean.io/ are translated like any other:
// they land under label.kubeocean.io or label-hash.kubeocean.io, never on a
// key that Kubeocean sets or selects on, so there is nothing to gain by
// dropping them, and a virtual Service that selects on one still works.
package tenantmeta

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

const (
	// maxNameLength is the longest name part of a label key.
	maxNameLength = 63
	// hashLength hex digits of SHA-256 (160 bits) name a hashed key.
	hashLength = 40
)

// LabelKey is the key under which a tenant's label key reaches a physical
// pod. The name part encodes the original key: an unprefixed key is itself
// with every "_" doubled; a prefixed key "p/n" is "p_n" (a DNS prefix has no
// "_", and a name starts with an alphanumeric, so the first "_" of the two
// forms is told apart: "_" followed by "_" in the first, by an alphanumeric
// in the second). When that does not fit 63 characters, the key is hashed
// under kubeoceanv1alpha1.HashedLabelDomain, which no readable form can produce.
func LabelKey(key string) string {
	if name, ok := readableName(key); ok {
		return kubeoceanv1alpha1.LabelDomain + "/" + name
	}
	sum := sha256.Sum256([]byte(key))
	return kubeoceanv1alpha1.HashedLabelDomain + "/" + hex.EncodeToString(sum[:])[:hashLength]
}

func readableName(key string) (string, bool) {
	var name string
	if prefix, rest, prefixed := strings.Cut(key, "/"); prefixed {
		name = prefix + "_" + rest
	} else {
		name = strings.ReplaceAll(key, "_", "__")
	}
	return name, len(name) <= maxNameLength
}

// VirtualLabelKey is the original key of a readably translated label key,
// and false for any other key (a hashed one is read from
// kubeoceanv1alpha1.AnnotationVirtualLabels).
func VirtualLabelKey(physicalKey string) (string, bool) {
	name, ok := strings.CutPrefix(physicalKey, kubeoceanv1alpha1.LabelDomain+"/")
	if !ok || name == "" {
		return "", false
	}
	i := strings.IndexByte(name, '_')
	switch {
	case i < 0:
		return name, true
	case i+1 < len(name) && name[i+1] == '_':
		return strings.ReplaceAll(name, "__", "_"), true
	}
	return name[:i] + "/" + name[i+1:], true
}

// Translator translates one pod's metadata; allowed keys pass as they are
// too. The zero Translator allows nothing.
type Translator struct {
	// LabelAllowed and AnnotationAllowed tell the keys the lender lets
	// through as they are (allowances.Set.LabelKey, AnnotationKey); nil
	// allows none. Keys of Kubeocean's domain never pass, whatever they
	// say.
	LabelAllowed, AnnotationAllowed func(key string) bool
}

// Labels are the physical pod's labels for the virtual pod's labels:
// each under LabelKey, and the allowed ones also under their own key.
// Kubeocean's own labels are not among them: the caller sets them after.
func (t Translator) Labels(virtual map[string]string) map[string]string {
	out := make(map[string]string, len(virtual))
	for k, v := range virtual {
		out[LabelKey(k)] = v
		if allows(t.LabelAllowed, k) {
			out[k] = v
		}
	}
	return out
}

// Annotations are the physical pod's annotations for the virtual pod's
// labels and annotations: the originals as JSON (each left out when
// empty), and the allowed annotations under their own key. The caller
// leaves out what Kubeocean records on the virtual pod, and sets its own
// annotations after.
func (t Translator) Annotations(labels, annotations map[string]string) map[string]string {
	out := make(map[string]string, 2)
	if len(labels) > 0 {
		out[kubeoceanv1alpha1.AnnotationVirtualLabels] = encode(labels)
	}
	if len(annotations) > 0 {
		out[kubeoceanv1alpha1.AnnotationVirtualAnnotations] = encode(annotations)
	}
	for k, v := range annotations {
		if allows(t.AnnotationAllowed, k) {
			out[k] = v
		}
	}
	return out
}

func allows(allowed func(string) bool, key string) bool {
	return allowed != nil && !kubeoceanKey(key) && allowed(key)
}

// kubeoceanKey tells a key of Kubeocean's domain (kubeocean.io and its
// subdomains, the translated forms among them).
func kubeoceanKey(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	return ok && (prefix == "kubeocean.io" || strings.HasSuffix(prefix, ".kubeocean.io"))
}

func encode(m map[string]string) string {
	data, err := json.Marshal(m) // sorted keys: the same map, the same text
	if err != nil {
		panic(err) // a map of strings always encodes
	}
	return string(data)
}

// Originals reads the virtual pod's labels and annotations that a physical
// pod records; a missing annotation reads as none.
func Originals(physicalAnnotations map[string]string) (labels, annotations map[string]string, err error) {
	decode := func(key string) (map[string]string, error) {
		data, ok := physicalAnnotations[key]
		if !ok {
			return nil, nil
		}
		var m map[string]string
		return m, json.Unmarshal([]byte(data), &m)
	}
	if labels, err = decode(kubeoceanv1alpha1.AnnotationVirtualLabels); err != nil {
		return nil, nil, err
	}
	annotations, err = decode(kubeoceanv1alpha1.AnnotationVirtualAnnotations)
	return labels, annotations, err
}
