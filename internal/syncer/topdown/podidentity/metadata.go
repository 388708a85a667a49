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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
)

// The downward API of labels and annotations. The physical pod carries the
// tenant's labels translated and its annotations only as JSON (package
// tenantmeta), so the physical kubelet would answer metadata.labels and
// metadata.annotations with Kubeocean's form. The pod must see its own:
//
//   - metadata.labels['k'] reads the translated label, which holds the
//     same value: the physical kubelet keeps it current, in env and in
//     volumes, and nothing else is needed;
//   - metadata.labels, metadata.annotations and metadata.annotations['k']
//     are served from the token Secret, which holds the virtual pod's
//     values, as identity fields are; the Secret records a digest of them
//     (kubeoceanv1alpha1.AnnotationMetadataDigest) and is patched when they change, and
//     only then.
//
// An env variable is resolved when its container starts, so it shows the
// value of that moment, as on a real node.

const (
	fieldLabels      = "metadata.labels"
	fieldAnnotations = "metadata.annotations"
)

// subscript is the key of a downward-API path "<field>['<key>']".
func subscript(fieldPath, field string) (string, bool) {
	rest, ok := strings.CutPrefix(fieldPath, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// metadataField tells the label and annotation fields served from the
// token Secret.
func metadataField(fieldPath string) bool {
	if fieldPath == fieldLabels || fieldPath == fieldAnnotations {
		return true
	}
	_, ok := subscript(fieldPath, fieldAnnotations)
	return ok
}

// MetadataFromSecretInEnv tells the fields an env variable reads from the
// token Secret: the API takes only subscripted labels and annotations in
// env, and a label is read from the translated one.
func MetadataFromSecretInEnv(fieldPath string) bool {
	_, ok := subscript(fieldPath, fieldAnnotations)
	return ok
}

func envFieldPath(env corev1.EnvVar) string {
	if env.ValueFrom == nil || env.ValueFrom.FieldRef == nil {
		return ""
	}
	return env.ValueFrom.FieldRef.FieldPath
}

// PhysicalLabelPath is the path that reads the label of a subscripted
// metadata.labels path on the physical pod, and false for other paths.
func PhysicalLabelPath(fieldPath string) (string, bool) {
	key, ok := subscript(fieldPath, fieldLabels)
	if !ok {
		return "", false
	}
	return fieldLabels + "['" + tenantmeta.LabelKey(key) + "']", true
}

// metadataValue is what a label or annotation field answers for the
// virtual pod, formatted as the kubelet formats it.
func metadataValue(pod *corev1.Pod, fieldPath string) string {
	switch fieldPath {
	case fieldLabels:
		return formatMap(pod.Labels)
	case fieldAnnotations:
		return formatMap(TenantAnnotations(pod))
	}
	if key, ok := subscript(fieldPath, fieldAnnotations); ok {
		return TenantAnnotations(pod)[key]
	}
	return ""
}

// formatMap is a map as a downward-API file shows it: one key="value" line
// per key, in key order, the value quoted as Go quotes strings.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[k]))
	}
	return b.String()
}

// SecretKey is the token Secret key of a field: the path itself when it is
// a valid key (the identity fields, metadata.labels), else a hash of it (a
// subscript holds "[", "'" and often "/").
func SecretKey(fieldPath string) string {
	if len(validation.IsConfigMapKey(fieldPath)) == 0 {
		return fieldPath
	}
	sum := sha256.Sum256([]byte(fieldPath))
	return "field-" + hex.EncodeToString(sum[:16])
}

// metadataDigest is the digest of the label and annotation values plan
// serves for virtual; "" when it serves none.
func metadataDigest(virtual *corev1.Pod, plan Plan) string {
	h := sha256.New()
	serves := false
	for _, field := range plan.fields {
		if metadataField(field) {
			serves = true
			fmt.Fprintf(h, "%s\x00%s\x00", field, metadataValue(virtual, field))
		}
	}
	if !serves {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// refreshMetadata patches the label and annotation values of a token
// Secret that is otherwise valid when they changed on the virtual pod:
// the values only, so its tokens are neither reissued nor read. The patch
// names the Secret's UID, so it fails on a Secret recreated since.
func (s *Secrets) refreshMetadata(ctx context.Context, secret *corev1.Secret, virtual *corev1.Pod, plan Plan) error {
	digest := metadataDigest(virtual, plan)
	if digest == "" || secret.Annotations[kubeoceanv1alpha1.AnnotationMetadataDigest] == digest {
		return nil
	}
	data := map[string][]byte{}
	for _, field := range plan.fields {
		if metadataField(field) {
			data[SecretKey(field)] = []byte(metadataValue(virtual, field))
		}
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": secret.UID, "annotations": map[string]string{kubeoceanv1alpha1.AnnotationMetadataDigest: digest}},
		"data":     data,
	})
	if err != nil {
		return err
	}
	_, err = s.Physical.Secrets(secret.Namespace).Patch(ctx, secret.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Its event brings the pod back.
		klog.FromContext(ctx).V(4).Info("Token Secret changed while updating its labels and annotations", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("updating the labels and annotations in token Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Updated the labels and annotations the pod reads", "secret", klog.KObj(secret))
	return nil
}

// TenantAnnotations are the virtual pod's annotations but the mapping
// Kubeocean records there: the pod's own, as its downward API shows them
// and its physical pod records them.
func TenantAnnotations(virtual *corev1.Pod) map[string]string {
	annotations := make(map[string]string, len(virtual.Annotations))
	for k, v := range virtual.Annotations {
		if !virtualOnlyAnnotations[k] {
			annotations[k] = v
		}
	}
	return annotations
}

// virtualOnlyAnnotations live on the virtual pod only: the mapping the
// controllers record there, and our own bookkeeping should a user copy it.
var virtualOnlyAnnotations = map[string]bool{
	kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: true,
	kubeoceanv1alpha1.AnnotationPhysicalPodName:      true,
	kubeoceanv1alpha1.AnnotationPhysicalPodUID:       true,
	kubeoceanv1alpha1.AnnotationLastSyncTime:         true,
	kubeoceanv1alpha1.AnnotationLastApplied:          true,
}
