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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/compact"
)

// The cache of token Secrets. Every synced pod has one, and of it the
// controller reads only whose it is (labels, the virtual pod's UID), which
// virtual pod its events wake (the virtual pod's namespace and name), when
// its tokens are due and which keys it holds. Cached as a *corev1.Secret,
// that took a Secret struct, its own annotation map and the strings in
// both, about 0.9 KB per pod; CompactTokenSecret keeps it as a
// TokenSecretRecord, about a third of that, and the controller reads it
// back as a Secret with those fields (Secrets.cached). The token values
// never enter the cache.

// TokenSecretRecord is what the cache keeps of a token Secret. It
// implements metav1.Object for the informer's keys and the controller's
// event handler; what it does not keep is compact.Unkept.
type TokenSecretRecord struct {
	compact.Unkept
	Namespace, Name, ResourceVersion string
	UID                              types.UID
	// Labels are shared with the other token Secrets of the binding: read
	// only.
	Labels map[string]string
	// The virtual pod the Secret serves (kubeocean.io/virtual-pod-*).
	VirtualPodNamespace, VirtualPodName string
	VirtualPodUID                       types.UID
	// RefreshAt is kubeoceanv1alpha1.AnnotationTokenRefreshAt, as written.
	RefreshAt string
	// MetadataDigest is kubeoceanv1alpha1.AnnotationMetadataDigest, as written: "" for the
	// Secrets of pods that read no labels or annotations.
	MetadataDigest string
	// Keys are the Secret's data keys with nil values, shared with the
	// token Secrets that have the same keys: read only.
	Keys map[string][]byte
	// kept holds what others may have added that a renewal, which writes
	// the whole Secret, must keep: nil for nearly every Secret.
	kept *keptMetadata
}

type keptMetadata struct {
	finalizers      []string
	ownerReferences []metav1.OwnerReference
}

// CompactTokenSecret is the informer transform of the token Secret cache:
// a token Secret (label kubeoceanv1alpha1.LabelPodToken) becomes a *TokenSecretRecord;
// anything else is kept as it is.
func CompactTokenSecret(obj any) (any, error) {
	secret, ok := obj.(*corev1.Secret)
	if !ok || secret.Labels[kubeoceanv1alpha1.LabelPodToken] != "true" {
		return obj, nil
	}
	annotations := secret.Annotations
	return &TokenSecretRecord{
		Namespace:           compact.Intern(secret.Namespace),
		Name:                secret.Name,
		ResourceVersion:     secret.ResourceVersion,
		UID:                 secret.UID,
		Labels:              compact.SharedMap(secret.Labels),
		VirtualPodNamespace: compact.Intern(annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace]),
		VirtualPodName:      annotations[kubeoceanv1alpha1.AnnotationVirtualPodName],
		VirtualPodUID:       types.UID(annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID]),
		// Tokens issued in the same second are due in the same second.
		RefreshAt: compact.Intern(annotations[kubeoceanv1alpha1.AnnotationTokenRefreshAt]),
		// The pods of one workload read the same values.
		MetadataDigest: compact.Intern(annotations[kubeoceanv1alpha1.AnnotationMetadataDigest]),
		Keys:           compact.SharedKeys(secret.Data),
		kept:           keep(secret.Finalizers, secret.OwnerReferences),
	}, nil
}

func keep(finalizers []string, ownerReferences []metav1.OwnerReference) *keptMetadata {
	if len(finalizers) == 0 && len(ownerReferences) == 0 {
		return nil
	}
	return &keptMetadata{finalizers: finalizers, ownerReferences: ownerReferences}
}

// Secret is the token Secret as the record knows it: metadata, the
// annotations the controller reads, and the keys without values.
func (r *TokenSecretRecord) Secret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: r.Namespace, Name: r.Name, UID: r.UID, ResourceVersion: r.ResourceVersion,
			Labels: r.Labels, Annotations: r.GetAnnotations(),
			Finalizers: r.GetFinalizers(), OwnerReferences: r.GetOwnerReferences(),
		},
		Data: r.Keys,
	}
}

// cached is the token Secret namespace/name as the cache holds
// it, or a NotFound error. The Secret shares its labels and keys with the
// cache: copy it before changing it.
func (s *Secrets) cached(namespace, name string) (*corev1.Secret, error) {
	obj, exists, err := s.Cache.GetByKey(namespace + "/" + name)
	switch {
	case err != nil:
		return nil, err
	case !exists:
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	switch cached := obj.(type) {
	case *TokenSecretRecord:
		return cached.Secret(), nil
	case *corev1.Secret: // an informer without CompactTokenSecret
		return cached, nil
	}
	return nil, fmt.Errorf("the token Secret cache holds a %T for %s/%s", obj, namespace, name)
}

var (
	_ metav1.Object  = &TokenSecretRecord{}
	_ runtime.Object = &TokenSecretRecord{}
)

// GetAnnotations returns the annotations the record keeps, in a map of the
// caller's own.
func (r *TokenSecretRecord) GetAnnotations() map[string]string {
	annotations := make(map[string]string, 4)
	set := func(key, value string) {
		if value != "" {
			annotations[key] = value
		}
	}
	set(kubeoceanv1alpha1.AnnotationVirtualPodNamespace, r.VirtualPodNamespace)
	set(kubeoceanv1alpha1.AnnotationVirtualPodName, r.VirtualPodName)
	set(kubeoceanv1alpha1.AnnotationVirtualPodUID, string(r.VirtualPodUID))
	set(kubeoceanv1alpha1.AnnotationTokenRefreshAt, r.RefreshAt)
	set(kubeoceanv1alpha1.AnnotationMetadataDigest, r.MetadataDigest)
	return annotations
}

func (r *TokenSecretRecord) GetNamespace() string               { return r.Namespace }
func (r *TokenSecretRecord) SetNamespace(namespace string)      { r.Namespace = namespace }
func (r *TokenSecretRecord) GetName() string                    { return r.Name }
func (r *TokenSecretRecord) SetName(name string)                { r.Name = name }
func (r *TokenSecretRecord) GetResourceVersion() string         { return r.ResourceVersion }
func (r *TokenSecretRecord) SetResourceVersion(version string)  { r.ResourceVersion = version }
func (r *TokenSecretRecord) GetUID() types.UID                  { return r.UID }
func (r *TokenSecretRecord) SetUID(uid types.UID)               { r.UID = uid }
func (r *TokenSecretRecord) GetLabels() map[string]string       { return r.Labels }
func (r *TokenSecretRecord) SetLabels(labels map[string]string) { r.Labels = labels }

func (r *TokenSecretRecord) GetFinalizers() []string {
	if r.kept == nil {
		return nil
	}
	return r.kept.finalizers
}

func (r *TokenSecretRecord) GetOwnerReferences() []metav1.OwnerReference {
	if r.kept == nil {
		return nil
	}
	return r.kept.ownerReferences
}

// GetObjectKind implements runtime.Object; a record is only ever cached,
// never sent.
func (r *TokenSecretRecord) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject implements runtime.Object. The labels, keys, finalizers
// and owner references are shared and read-only.
func (r *TokenSecretRecord) DeepCopyObject() runtime.Object {
	out := *r
	return &out
}
