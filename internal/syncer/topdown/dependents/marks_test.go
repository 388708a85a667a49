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
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

const (
	testCluster = "c1"
	testBinding = types.UID("binding-c1")
	otherLabel  = kubeoceanv1alpha1.LabelSyncedByPrefix + "c2"
)

var (
	ourLabel     = kubeoceanv1alpha1.SyncedByLabel(testCluster)
	ourFinalizer = kubeoceanv1alpha1.Finalizer(testCluster)
	otherFinal   = kubeoceanv1alpha1.Finalizer("c2")
	managed      = kubeoceanv1alpha1.LabelManagedBy
)

func meta(labels, annotations map[string]string, finalizers ...string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Labels: labels, Annotations: annotations, Finalizers: finalizers}
}

func TestMark(t *testing.T) {
	at := location{namespace: "mount", name: "conf-abc"}
	mapping := map[string]string{kubeoceanv1alpha1.AnnotationPhysicalName: "conf-abc", kubeoceanv1alpha1.AnnotationPhysicalNamespace: "mount"}
	for name, tc := range map[string]struct {
		in       *metav1.ObjectMeta
		usedByPV bool
		want     *metav1.ObjectMeta
		changed  bool
	}{
		"untouched object": {
			in:      meta(map[string]string{"app": "web"}, nil),
			want:    meta(map[string]string{"app": "web", ourLabel: "true", managed: "kubeocean"}, mapping, ourFinalizer),
			changed: true,
		},
		"marked already": {
			in:   meta(map[string]string{ourLabel: "true", managed: "kubeocean"}, mapping, ourFinalizer),
			want: meta(map[string]string{ourLabel: "true", managed: "kubeocean"}, mapping, ourFinalizer),
		},
		"finalizer removed by someone": {
			in:      meta(map[string]string{ourLabel: "true", managed: "kubeocean"}, mapping),
			want:    meta(map[string]string{ourLabel: "true", managed: "kubeocean"}, mapping, ourFinalizer),
			changed: true,
		},
		"another binding's mapping stays": {
			in: meta(map[string]string{otherLabel: "true", managed: "kubeocean"},
				map[string]string{kubeoceanv1alpha1.AnnotationPhysicalName: "conf-abc", kubeoceanv1alpha1.AnnotationPhysicalNamespace: "other"}, otherFinal),
			want: meta(map[string]string{otherLabel: "true", ourLabel: "true", managed: "kubeocean"},
				map[string]string{kubeoceanv1alpha1.AnnotationPhysicalName: "conf-abc", kubeoceanv1alpha1.AnnotationPhysicalNamespace: "other"}, otherFinal, ourFinalizer),
			changed: true,
		},
		"used by a PV": {
			in:       meta(map[string]string{ourLabel: "true", managed: "kubeocean"}, mapping, ourFinalizer),
			usedByPV: true,
			want:     meta(map[string]string{ourLabel: "true", managed: "kubeocean", kubeoceanv1alpha1.LabelUsedByPV: "true"}, mapping, ourFinalizer),
			changed:  true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := tc.in.DeepCopy()
			if changed := mark(obj, testCluster, at, tc.usedByPV); changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			expectMeta(t, obj, tc.want)
		})
	}
}

func TestUnmark(t *testing.T) {
	mapping := map[string]string{kubeoceanv1alpha1.AnnotationPhysicalName: "x", kubeoceanv1alpha1.AnnotationPhysicalNamespace: "mount", "user": "keep"}
	deleting := func(m *metav1.ObjectMeta) *metav1.ObjectMeta {
		m.DeletionTimestamp = ptr.To(metav1.Now())
		return m
	}
	for name, tc := range map[string]struct {
		in, want *metav1.ObjectMeta
		changed  bool
	}{
		"only binding": {
			in:      meta(map[string]string{"app": "web", ourLabel: "true", managed: "kubeocean", kubeoceanv1alpha1.LabelUsedByPV: "true"}, mapping, ourFinalizer, "user/f"),
			want:    meta(map[string]string{"app": "web"}, map[string]string{"user": "keep"}, "user/f"),
			changed: true,
		},
		"another binding keeps the shared marks": {
			in:      meta(map[string]string{ourLabel: "true", otherLabel: "true", managed: "kubeocean"}, mapping, ourFinalizer, otherFinal),
			want:    meta(map[string]string{otherLabel: "true", managed: "kubeocean"}, mapping, otherFinal),
			changed: true,
		},
		"being deleted: only the finalizer": {
			in:      deleting(meta(map[string]string{ourLabel: "true", managed: "kubeocean"}, mapping, ourFinalizer)),
			want:    meta(map[string]string{ourLabel: "true", managed: "kubeocean"}, mapping),
			changed: true,
		},
		"nothing of ours": {
			in:   meta(map[string]string{"app": "web"}, nil),
			want: meta(map[string]string{"app": "web"}, nil),
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := tc.in.DeepCopy()
			if changed := unmark(obj, testCluster); changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
			expectMeta(t, obj, tc.want)
		})
	}
}

func expectMeta(t *testing.T, got, want *metav1.ObjectMeta) {
	t.Helper()
	if !maps.Equal(got.Labels, want.Labels) {
		t.Errorf("labels %v, want %v", got.Labels, want.Labels)
	}
	if !maps.Equal(got.Annotations, want.Annotations) {
		t.Errorf("annotations %v, want %v", got.Annotations, want.Annotations)
	}
	if !slices.Equal(got.Finalizers, want.Finalizers) {
		t.Errorf("finalizers %v, want %v", got.Finalizers, want.Finalizers)
	}
}

func TestOwnershipAndVirtualKey(t *testing.T) {
	for name, tc := range map[string]struct {
		annotations        map[string]string
		namespaced         bool
		ownerNS, ownerName string
		owned              bool
		key                cache.ObjectName
		keyOK              bool
	}{
		"copy of app/conf": {
			annotations: mappingAnnotations("app", "conf"), namespaced: true,
			ownerNS: "app", ownerName: "conf", owned: true, key: cache.ObjectName{Namespace: "app", Name: "conf"}, keyOK: true,
		},
		"copy of another object": {
			annotations: mappingAnnotations("app", "other"), namespaced: true,
			ownerNS: "app", ownerName: "conf", key: cache.ObjectName{Namespace: "app", Name: "other"}, keyOK: true,
		},
		"no mapping": {namespaced: true, ownerNS: "app", ownerName: "conf"},
		"copy of PV": {
			annotations: mappingAnnotations("", "pv-1"),
			ownerName:   "pv-1", owned: true, key: cache.ObjectName{Name: "pv-1"}, keyOK: true,
		},
		"namespaced mapping on a PV": {
			annotations: mappingAnnotations("app", "pv-1"), ownerName: "pv-1",
		},
	} {
		t.Run(name, func(t *testing.T) {
			obj := meta(nil, tc.annotations)
			if got := ownedBy(obj, tc.ownerNS, tc.ownerName); got != tc.owned {
				t.Errorf("ownedBy = %v, want %v", got, tc.owned)
			}
			key, ok := VirtualKeyOf(obj, tc.namespaced)
			if ok != tc.keyOK || key != tc.key {
				t.Errorf("VirtualKeyOf = %v, %v; want %v, %v", key, ok, tc.key, tc.keyOK)
			}
		})
	}
}

func TestPhysicalLabels(t *testing.T) {
	labels := physicalLabels(map[string]string{"app": "web", ourLabel: "true", otherLabel: "true", kubeoceanv1alpha1.LabelUsedByPV: "true"})
	want := map[string]string{"app": "web", managed: "kubeocean", kubeoceanv1alpha1.LabelUsedByPV: "true"}
	if !maps.Equal(labels, want) {
		t.Errorf("physicalLabels = %v, want %v", labels, want)
	}
}

// The copy's labels follow the virtual object's by a three-way merge:
// ours are put back, those we wrote and no longer want go, others' stay.
func TestMergeMetadata(t *testing.T) {
	ours := map[string]string{"app": "web", managed: "kubeocean"}
	desired := meta(ours, copyAnnotations("app", "conf", ours))
	written := func(labels map[string]string, extra map[string]string) *metav1.ObjectMeta {
		annotations := copyAnnotations("app", "conf", ours)
		maps.Copy(annotations, extra)
		return meta(labels, annotations)
	}
	for name, tc := range map[string]struct {
		actual     *metav1.ObjectMeta
		wantLabels map[string]string
		changed    bool
	}{
		"same":                       {actual: written(ours, nil), wantLabels: ours},
		"extra annotation is theirs": {actual: written(ours, map[string]string{"pv.kubernetes.io/bind-completed": "yes"}), wantLabels: ours},
		"extra label is theirs": {
			actual:     written(map[string]string{"app": "web", managed: "kubeocean", "team": "blue"}, nil),
			wantLabels: map[string]string{"app": "web", managed: "kubeocean", "team": "blue"},
		},
		"our label edited": {
			actual: written(map[string]string{"app": "db", managed: "kubeocean"}, nil), wantLabels: ours, changed: true,
		},
		"our label removed": {actual: written(map[string]string{managed: "kubeocean"}, nil), wantLabels: ours, changed: true},
		"label we wrote and no longer want": {
			actual: meta(map[string]string{"app": "web", "tier": "front", managed: "kubeocean", "team": "blue"},
				copyAnnotations("app", "conf", map[string]string{"app": "web", "tier": "front", managed: "kubeocean"})),
			wantLabels: map[string]string{"app": "web", managed: "kubeocean", "team": "blue"}, changed: true,
		},
		"nothing recorded": {
			actual:     meta(map[string]string{"team": "blue"}, mappingAnnotations("app", "conf")),
			wantLabels: map[string]string{"app": "web", managed: "kubeocean", "team": "blue"}, changed: true,
		},
	} {
		t.Run(name, func(t *testing.T) {
			labels, annotations, changed := mergeMetadata(tc.actual, desired)
			if changed != tc.changed || !maps.Equal(labels, tc.wantLabels) {
				t.Errorf("mergeMetadata = %v, changed %v; want %v, changed %v", labels, changed, tc.wantLabels, tc.changed)
			}
			for k, v := range desired.Annotations {
				if annotations[k] != v {
					t.Errorf("annotation %s = %q, want %q", k, annotations[k], v)
				}
			}
			applied := tc.actual.DeepCopy()
			applied.Labels, applied.Annotations = labels, annotations
			if _, _, again := mergeMetadata(applied, desired); again {
				t.Errorf("a second merge changes something: %v %v", applied.Labels, applied.Annotations)
			}
		})
	}
}

// Updates of a copy that touch only others' labels and annotations, or
// nothing at all, are dropped before they reach the queue.
func TestCopyChanged(t *testing.T) {
	ours := map[string]string{"app": "web", managed: "kubeocean"}
	base := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1", Labels: maps.Clone(ours), Annotations: copyAnnotations("app", "conf", ours)},
		Data:       map[string]string{"k": "v"},
	}
	for name, tc := range map[string]struct {
		change func(*corev1.ConfigMap)
		want   bool
	}{
		"their label":      {change: func(c *corev1.ConfigMap) { c.Labels["team"] = "blue" }},
		"their annotation": {change: func(c *corev1.ConfigMap) { c.Annotations["note"] = "x" }},
		"only a version":   {change: func(*corev1.ConfigMap) {}},
		"our label":        {change: func(c *corev1.ConfigMap) { delete(c.Labels, "app") }, want: true},
		"identity label":   {change: func(c *corev1.ConfigMap) { delete(c.Labels, managed) }, want: true},
		"mapping":          {change: func(c *corev1.ConfigMap) { delete(c.Annotations, kubeoceanv1alpha1.AnnotationVirtualName) }, want: true},
		"record":           {change: func(c *corev1.ConfigMap) { delete(c.Annotations, AnnotationLastApplied) }, want: true},
		"data":             {change: func(c *corev1.ConfigMap) { c.Data["k"] = "w" }, want: true},
		"deleting":         {change: func(c *corev1.ConfigMap) { c.DeletionTimestamp = ptr.To(metav1.Now()) }, want: true},
	} {
		t.Run(name, func(t *testing.T) {
			updated := base.DeepCopy()
			updated.ResourceVersion = "2"
			tc.change(updated)
			if got := CopyChanged(base, updated); got != tc.want {
				t.Errorf("CopyChanged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConfigMapAndSecretContent(t *testing.T) {
	cm := func(immutable bool, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{Data: data, Immutable: ptr.To(immutable)}
	}
	for name, tc := range map[string]struct {
		actual, desired  *corev1.ConfigMap
		differs, replace bool
	}{
		"same":                      {actual: cm(false, map[string]string{"k": "v"}), desired: cm(false, map[string]string{"k": "v"})},
		"nil and empty data":        {actual: &corev1.ConfigMap{}, desired: cm(false, map[string]string{})},
		"data changed":              {actual: cm(false, map[string]string{"k": "v"}), desired: cm(false, map[string]string{"k": "w"}), differs: true},
		"made immutable":            {actual: cm(false, nil), desired: cm(true, nil), differs: true},
		"immutable content changed": {actual: cm(true, map[string]string{"k": "v"}), desired: cm(true, map[string]string{"k": "w"}), differs: true, replace: true},
		"immutable made mutable":    {actual: cm(true, nil), desired: cm(false, nil), differs: true, replace: true},
	} {
		t.Run("ConfigMap/"+name, func(t *testing.T) {
			if got := configMapContent.differs(tc.actual, tc.desired); got != tc.differs {
				t.Errorf("differs = %v, want %v", got, tc.differs)
			}
			if got := configMapContent.replace(tc.actual, tc.desired); got != tc.replace {
				t.Errorf("replace = %v, want %v", got, tc.replace)
			}
		})
	}

	secret := func(typ corev1.SecretType, data string) *corev1.Secret {
		return &corev1.Secret{Type: typ, Data: map[string][]byte{"k": []byte(data)}}
	}
	for name, tc := range map[string]struct {
		actual, desired  *corev1.Secret
		differs, replace bool
	}{
		"same":         {actual: secret(corev1.SecretTypeOpaque, "v"), desired: secret("", "v")},
		"data changed": {actual: secret(corev1.SecretTypeOpaque, "v"), desired: secret(corev1.SecretTypeOpaque, "w"), differs: true},
		"type changed": {actual: secret(corev1.SecretTypeOpaque, "v"), desired: secret(corev1.SecretTypeDockerConfigJson, "v"), differs: true, replace: true},
	} {
		t.Run("Secret/"+name, func(t *testing.T) {
			if got := secretContent.differs(tc.actual, tc.desired); got != tc.differs {
				t.Errorf("differs = %v, want %v", got, tc.differs)
			}
			if got := secretContent.replace(tc.actual, tc.desired); got != tc.replace {
				t.Errorf("replace = %v, want %v", got, tc.replace)
			}
		})
	}
	if got := secretContent.unsupported(secret(corev1.SecretTypeServiceAccountToken, "t")); got != ReasonServiceAccountToken {
		t.Errorf("service-account token: unsupported = %q", got)
	}
}
