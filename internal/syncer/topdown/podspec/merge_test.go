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
	"encoding/json"
	"maps"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/lastapplied"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

func TestMergeKeys(t *testing.T) {
	noneEnforced := func(string) bool { return false }
	tests := []struct {
		name                   string
		current, last, desired map[string]string
		enforced               func(string) bool
		want                   map[string]*string
	}{
		{
			name:    "in step: nothing",
			current: map[string]string{"a": "1"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"},
			want: map[string]*string{},
		},
		{
			name:    "key added on the virtual side is set",
			current: map[string]string{"a": "1"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1", "b": "2"},
			want: map[string]*string{"b": ptr.To("2")},
		},
		{
			name:    "value changed on the virtual side is set",
			current: map[string]string{"a": "1"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "2"},
			want: map[string]*string{"a": ptr.To("2")},
		},
		{
			name:    "key removed on the virtual side is removed",
			current: map[string]string{"a": "1", "b": "2"}, last: map[string]string{"a": "1", "b": "2"}, desired: map[string]string{"a": "1"},
			want: map[string]*string{"b": nil},
		},
		{
			name:    "key removed on both sides: nothing",
			current: map[string]string{}, last: map[string]string{"b": "2"}, desired: map[string]string{},
			want: map[string]*string{},
		},
		{
			name:    "key added on the physical side stays",
			current: map[string]string{"a": "1", "webhook": "x"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"},
			want: map[string]*string{},
		},
		{
			name:    "value a webhook changed stays while ours is unchanged",
			current: map[string]string{"a": "mutated"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"},
			want: map[string]*string{},
		},
		{
			name:    "key removed on the physical side stays removed",
			current: map[string]string{}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "1"},
			want: map[string]*string{},
		},
		{
			name:    "our change wins over the physical side's",
			current: map[string]string{"a": "mutated"}, last: map[string]string{"a": "1"}, desired: map[string]string{"a": "2"},
			want: map[string]*string{"a": ptr.To("2")},
		},
		{
			name:    "enforced key is put back",
			current: map[string]string{"owner": "someone"}, last: map[string]string{"owner": "us"}, desired: map[string]string{"owner": "us"},
			enforced: func(k string) bool { return k == "owner" },
			want:     map[string]*string{"owner": ptr.To("us")},
		},
		{
			name:    "nothing applied yet: desired keys missing or different are set",
			current: map[string]string{"a": "1", "b": "x", "other": "y"}, desired: map[string]string{"a": "1", "b": "2", "c": "3"},
			want: map[string]*string{"b": ptr.To("2"), "c": ptr.To("3")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enforced := tt.enforced
			if enforced == nil {
				enforced = noneEnforced
			}
			got := mergeKeys(tt.current, tt.last, tt.desired, enforced)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mergeKeys = %s, want %s", show(got), show(tt.want))
			}
		})
	}
}

func show(m map[string]*string) string {
	data, _ := json.Marshal(m)
	return string(data)
}

func TestMergeDeadline(t *testing.T) {
	tests := []struct {
		name                   string
		current, last, desired *int64
		want                   *int64
	}{
		{name: "unchanged", current: ptr.To[int64](60), last: ptr.To[int64](60), desired: ptr.To[int64](60)},
		{name: "none", current: nil, last: nil, desired: nil},
		{name: "set on the virtual pod", current: nil, last: nil, desired: ptr.To[int64](60), want: ptr.To[int64](60)},
		{name: "shortened on the virtual pod", current: ptr.To[int64](60), last: ptr.To[int64](60), desired: ptr.To[int64](30), want: ptr.To[int64](30)},
		{name: "physical already shorter", current: ptr.To[int64](10), last: ptr.To[int64](60), desired: ptr.To[int64](30)},
	}
	for _, tt := range tests {
		if got := mergeDeadline(tt.current, tt.last, tt.desired); !ptr.Equal(got, tt.want) {
			t.Errorf("%s: mergeDeadline = %v, want %v", tt.name, ptr.Deref(got, -1), ptr.Deref(tt.want, -1))
		}
	}
}

// physicalFor is the physical pod created for virtual, as it is stored.
func physicalFor(virtual *corev1.Pod) *corev1.Pod {
	pod := PhysicalPod(virtual, Translation{MountNamespace: mountNS, Owner: testOwner, PhysicalName: physicalName, PhysicalNode: physicalNode,
		Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual)})
	pod.UID = physicalUID
	pod.ResourceVersion = "20"
	return pod
}

func decodePatch(t *testing.T, patch []byte) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(patch, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUpdatePatch(t *testing.T) {
	t.Run("freshly created pod needs none", func(t *testing.T) {
		virtual := fullVirtualPod()
		if patch := UpdatePatch(physicalFor(virtual), DesiredState(virtual, testOwner, allowances.Set{})); patch != nil {
			t.Errorf("patch = %s, want none", patch)
		}
	})
	t.Run("physical-side additions need none", func(t *testing.T) {
		virtual := fullVirtualPod()
		physical := physicalFor(virtual)
		physical.Labels["injected"] = "yes"
		physical.Annotations["sidecar.example.com/status"] = "injected"
		if patch := UpdatePatch(physical, DesiredState(virtual, testOwner, allowances.Set{})); patch != nil {
			t.Errorf("patch = %s, want none", patch)
		}
	})
	t.Run("virtual changes are carried", func(t *testing.T) {
		virtual := fullVirtualPod()
		physical := physicalFor(virtual)
		physical.Labels["injected"] = "yes"
		virtual.Labels["tier"] = "frontend"
		delete(virtual.Annotations, "team")
		virtual.Spec.ActiveDeadlineSeconds = ptr.To[int64](120)
		virtual.Spec.Containers[0].Image = "nginx:2"
		// Bookkeeping of the bottom-up side changes nothing.
		virtual.Annotations[kubeoceanv1alpha1.AnnotationLastSyncTime] = "2026-05-05T00:00:00Z"

		desired := DesiredState(virtual, testOwner, allowances.Set{})
		patch := decodePatch(t, UpdatePatch(physical, desired))
		want := map[string]any{
			"metadata": map[string]any{
				"uid":    string(physicalUID),
				"labels": map[string]any{"label.kubeocean.io/tier": "frontend"},
				"annotations": map[string]any{
					kubeoceanv1alpha1.AnnotationVirtualLabels:      `{"app":"web","tier":"frontend"}`,
					kubeoceanv1alpha1.AnnotationVirtualAnnotations: nil,
					AnnotationLastApplied:                          desired.encode(),
				},
			},
			"spec": map[string]any{
				"activeDeadlineSeconds": float64(120),
				"containers":            []any{map[string]any{"name": "app", "image": "nginx:2"}},
			},
		}
		if !reflect.DeepEqual(patch, want) {
			t.Errorf("patch = %v\nwant    %v", patch, want)
		}
	})
	t.Run("removed managed-by label is put back", func(t *testing.T) {
		virtual := podtest.BoundPod()
		physical := physicalFor(virtual)
		delete(physical.Labels, kubeoceanv1alpha1.LabelManagedBy)
		patch := decodePatch(t, UpdatePatch(physical, DesiredState(virtual, testOwner, allowances.Set{})))
		labels := patch["metadata"].(map[string]any)["labels"]
		if want := map[string]any{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}; !reflect.DeepEqual(labels, want) {
			t.Errorf("labels patch = %v, want %v", labels, want)
		}
	})
	t.Run("edited virtual-pod annotation is put back", func(t *testing.T) {
		virtual := podtest.BoundPod()
		physical := physicalFor(virtual)
		physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "someone-else"
		patch := decodePatch(t, UpdatePatch(physical, DesiredState(virtual, testOwner, allowances.Set{})))
		want := map[string]any{"uid": string(physicalUID), "annotations": map[string]any{kubeoceanv1alpha1.AnnotationVirtualPodUID: string(virtualUID)}}
		if !reflect.DeepEqual(patch["metadata"], want) || patch["spec"] != nil {
			t.Errorf("patch = %v, want metadata %v only", patch, want)
		}
	})
	t.Run("older record naming the virtual pod needs none", func(t *testing.T) {
		// Versions before this one recorded the enforced annotations too:
		// their pods are not patched for that alone.
		virtual := fullVirtualPod()
		physical := physicalFor(virtual)
		older := DesiredState(virtual, testOwner, allowances.Set{})
		older.Annotations = maps.Clone(older.Annotations)
		data, err := json.Marshal(older) // with the enforced annotations
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(data), kubeoceanv1alpha1.AnnotationVirtualPodUID) {
			t.Fatalf("record %s does not name the virtual pod", data)
		}
		physical.Annotations[AnnotationLastApplied] = string(data)
		if patch := UpdatePatch(physical, DesiredState(virtual, testOwner, allowances.Set{})); patch != nil {
			t.Errorf("patch = %s, want none", patch)
		}
	})
	t.Run("broken last-applied is rewritten", func(t *testing.T) {
		virtual := podtest.BoundPod()
		physical := physicalFor(virtual)
		physical.Annotations[AnnotationLastApplied] = "{"
		desired := DesiredState(virtual, testOwner, allowances.Set{})
		patch := decodePatch(t, UpdatePatch(physical, desired))
		want := map[string]any{"uid": string(physicalUID), "annotations": map[string]any{AnnotationLastApplied: desired.encode()}}
		if !reflect.DeepEqual(patch["metadata"], want) || patch["spec"] != nil {
			t.Errorf("patch = %v, want metadata %v only", patch, want)
		}
	})
}

func TestDesiredStateDropsVirtualBookkeeping(t *testing.T) {
	state := DesiredState(fullVirtualPod(), testOwner, allowances.Set{})
	for _, k := range []string{
		kubeoceanv1alpha1.AnnotationPhysicalPodNamespace, kubeoceanv1alpha1.AnnotationPhysicalPodName,
		kubeoceanv1alpha1.AnnotationPhysicalPodUID, kubeoceanv1alpha1.AnnotationLastSyncTime,
	} {
		if _, ok := state.Annotations[k]; ok {
			t.Errorf("annotation %s copied to the physical pod", k)
		}
	}
}

// The pods of one workload record the same last-applied state, which
// names none of them, so that caches can hold it once.
func TestLastAppliedIsTheWorkloads(t *testing.T) {
	one, other := fullVirtualPod(), fullVirtualPod()
	other.Name, other.UID = "web-2", "virtual-uid-2"
	recorded := physicalFor(one).Annotations[AnnotationLastApplied]
	if otherRecorded := physicalFor(other).Annotations[AnnotationLastApplied]; recorded != otherRecorded {
		t.Errorf("last-applied of two pods of one workload differ:\n%s\n%s", recorded, otherRecorded)
	}
	for _, name := range []string{string(one.UID), kubeoceanv1alpha1.AnnotationVirtualPodName, kubeoceanv1alpha1.AnnotationVirtualPodUID} {
		if strings.Contains(recorded, name) {
			t.Errorf("last-applied %s names %q", recorded, name)
		}
	}
}

// allowing is what a policy of the test binding allows.
func allowing(a kubeoceanv1alpha1.WorkloadAllowances) allowances.Set {
	return allowances.Of([]*kubeoceanv1alpha1.ResourceLeasingPolicy{{
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: "b", Allowances: &a},
	}}, "b", "mount")
}

// applied is physical with patch applied to its labels and annotations.
func applied(t *testing.T, physical *corev1.Pod, patch []byte) *corev1.Pod {
	t.Helper()
	var p struct {
		Metadata struct {
			Labels      map[string]*string `json:"labels"`
			Annotations map[string]*string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		t.Fatal(err)
	}
	out := physical.DeepCopy()
	out.Labels = lastapplied.Apply(physical.Labels, p.Metadata.Labels)
	out.Annotations = lastapplied.Apply(physical.Annotations, p.Metadata.Annotations)
	return out
}

// A pod made by the version that copied labels and annotations as they
// were is moved to the translated form by its next patch, in place, and
// needs none after.
func TestUpdatePatchMovesThePreviousFormToTheTranslated(t *testing.T) {
	virtual := fullVirtualPod()
	physical := physicalFor(virtual)
	physical.Labels = testOwner.Stamp(map[string]string{"app": "web"})
	physical.Annotations = map[string]string{
		"team": "a",
		kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtualNS,
		kubeoceanv1alpha1.AnnotationVirtualPodName:      virtualName,
		kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(virtualUID),
		AnnotationLastApplied: `{"labels":{"app":"web","kubeocean.io/binding-uid":"binding-uid","kubeocean.io/cluster-id":"c1","kubeocean.io/managed-by":"kubeocean"},` +
			`"annotations":{"team":"a"},"images":{"containers/app":"nginx:1","initContainers/init":"busybox:1"}}`,
	}
	desired := DesiredState(virtual, testOwner, allowances.Set{})
	patch := UpdatePatch(physical, desired)
	if patch == nil {
		t.Fatal("no patch for a pod of the previous form")
	}
	if spec := decodePatch(t, patch)["spec"]; spec != nil {
		t.Errorf("patch changes the spec: %v", spec)
	}
	moved := applied(t, physical, patch)
	fresh := physicalFor(virtual)
	if !maps.Equal(moved.Labels, fresh.Labels) || !maps.Equal(moved.Annotations, fresh.Annotations) {
		t.Errorf("after the patch:\nlabels      %v\nannotations %v\nwant        %v\n            %v", moved.Labels, moved.Annotations, fresh.Labels, fresh.Annotations)
	}
	if again := UpdatePatch(moved, desired); again != nil {
		t.Errorf("second patch = %s, want none", again)
	}
}

func TestUpdatePatchOfTranslatedMetadata(t *testing.T) {
	allowApp := allowing(kubeoceanv1alpha1.WorkloadAllowances{LabelKeys: []string{"app"}, AnnotationKeys: []string{"team"}})
	t.Run("a changed label is changed in its translated form", func(t *testing.T) {
		virtual := fullVirtualPod()
		physical := physicalFor(virtual)
		virtual.Labels["app"] = "api"
		patch := decodePatch(t, UpdatePatch(physical, DesiredState(virtual, testOwner, allowances.Set{})))
		labels := patch["metadata"].(map[string]any)["labels"]
		if want := map[string]any{"label.kubeocean.io/app": "api"}; !reflect.DeepEqual(labels, want) {
			t.Errorf("labels patch = %v, want %v", labels, want)
		}
		annotations := patch["metadata"].(map[string]any)["annotations"].(map[string]any)
		if got := annotations[kubeoceanv1alpha1.AnnotationVirtualLabels]; got != `{"app":"api"}` {
			t.Errorf("original labels recorded as %v", got)
		}
	})
	t.Run("allowed keys pass as they are, and go when no longer allowed", func(t *testing.T) {
		virtual := fullVirtualPod()
		desired := DesiredState(virtual, testOwner, allowApp)
		if desired.Labels["app"] != "web" || desired.Labels["label.kubeocean.io/app"] != "web" || desired.Annotations["team"] != "a" {
			t.Fatalf("desired = %v, %v; want app and team as they are, app translated too", desired.Labels, desired.Annotations)
		}
		physical := PhysicalPod(virtual, Translation{MountNamespace: mountNS, Owner: testOwner, PhysicalName: physicalName,
			PhysicalNode: physicalNode, Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual), Allowed: allowApp})
		if physical.Labels["app"] != "web" || physical.Annotations["team"] != "a" {
			t.Fatalf("created with %v, %v; want the allowed keys", physical.Labels, physical.Annotations)
		}
		moved := applied(t, physical, UpdatePatch(physical, DesiredState(virtual, testOwner, allowances.Set{})))
		if _, ok := moved.Labels["app"]; ok {
			t.Errorf("label app stays after its allowance went: %v", moved.Labels)
		}
		if _, ok := moved.Annotations["team"]; ok {
			t.Errorf("annotation team stays after its allowance went: %v", moved.Annotations)
		}
		if moved.Labels["label.kubeocean.io/app"] != "web" {
			t.Errorf("translated label lost: %v", moved.Labels)
		}
	})
	t.Run("a tenant's kubeocean.io keys never set Kubeocean's", func(t *testing.T) {
		virtual := fullVirtualPod()
		virtual.Labels[kubeoceanv1alpha1.LabelBindingUID] = "other-binding"
		virtual.Labels[kubeoceanv1alpha1.LabelVirtualNamespace] = "other-namespace"
		virtual.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "other-uid"
		forgeAll := allowing(kubeoceanv1alpha1.WorkloadAllowances{LabelKeys: []string{"kubeocean.io/*"}, AnnotationKeys: []string{"kubeocean.io/*"}})
		desired := DesiredState(virtual, testOwner, forgeAll)
		if desired.Labels[kubeoceanv1alpha1.LabelBindingUID] != string(testBinding) ||
			desired.Labels[kubeoceanv1alpha1.LabelVirtualNamespace] != virtualNS ||
			desired.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(virtualUID) {
			t.Errorf("desired = %v, %v; want Kubeocean's own values", desired.Labels, desired.Annotations)
		}
		if desired.Labels[tenantmeta.LabelKey(kubeoceanv1alpha1.LabelBindingUID)] != "other-binding" {
			t.Errorf("the tenant's label is not kept translated: %v", desired.Labels)
		}
	})
}
