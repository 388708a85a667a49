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

package policy

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func TestFinalizerIsAddedInItsOwnPass(t *testing.T) {
	f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{newPolicy("p", binding)})

	result, err, actions := f.reconcile("p")
	if err != nil || result != (controller.Result{}) {
		t.Fatalf("reconcile = %+v, %v", result, err)
	}
	expectVerbs(t, actions, "patch")
	finalizers := patchedFinalizers(t, actions[0])
	if len(finalizers) != 1 || finalizers[0] != kubeoceanv1alpha1.FinalizerResourceLeasingPolicy {
		t.Fatalf("finalizers = %v", finalizers)
	}
	if f.cached("p").Status.Phase != "" {
		t.Fatalf("the metadata pass also wrote status: %+v", f.cached("p").Status)
	}

	// The update event brings the status pass.
	_, err, actions = f.reconcile("p")
	if err != nil {
		t.Fatal(err)
	}
	expectVerbs(t, actions, "update/status")
}

// A policy pinned to the binding's mount namespace is the binding's alone:
// reconciled like one that names no mount namespace.
func TestPolicyPinnedHereIsReconciled(t *testing.T) {
	pinned := newPolicy("p", binding)
	pinned.Spec.MountNamespace = mount
	f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{pinned})
	_, err, actions := f.reconcile("p")
	if err != nil {
		t.Fatal(err)
	}
	expectVerbs(t, actions, "patch")
	if finalizers := patchedFinalizers(t, actions[0]); !slices.Equal(finalizers, []string{kubeoceanv1alpha1.FinalizerResourceLeasingPolicy}) {
		t.Fatalf("finalizers = %v", finalizers)
	}
}

func TestDeletionWaitsForVirtualNodes(t *testing.T) {
	policy := withFinalizer(newPolicy("p", binding))
	policy.Finalizers = append(policy.Finalizers, "example.com/other")
	policy.DeletionTimestamp = &metav1.Time{Time: monday10}
	lent := virtualNode("vnode-cid-a", binding, "p")
	f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy},
		lent,
		virtualNode("vnode-cid-b", binding, "other-policy"),
		virtualNode("vnode-elsewhere", "binding-b", "p"), // another binding's node does not hold it
	)

	result, err, actions := f.reconcile("p")
	if err != nil || result != (controller.Result{}) || len(actions) != 0 {
		t.Fatalf("while a virtual node names the policy: %+v, %v, writes %v; want no write and no polling", result, err, verbsOf(actions))
	}

	// The node controller lets go of the node: its annotation changes.
	released := lent.DeepCopy()
	released.Annotations[kubeoceanv1alpha1.AnnotationResourceLeasingPolicy] = "another"
	if err := f.nodes.Update(released); err != nil {
		t.Fatal(err)
	}
	_, err, actions = f.reconcile("p")
	if err != nil {
		t.Fatal(err)
	}
	expectVerbs(t, actions, "patch")
	if finalizers := patchedFinalizers(t, actions[0]); len(finalizers) != 1 || finalizers[0] != "example.com/other" {
		t.Errorf("finalizers after reclaim = %v, want only the foreign one", finalizers)
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Normal "+kubeoceanv1alpha1.EventPolicyReclaimed) {
		t.Errorf("events = %q", events)
	}

	_, err, actions = f.reconcile("p")
	if err != nil || len(actions) != 0 {
		t.Errorf("after the finalizer is gone: %v, writes %v", err, verbsOf(actions))
	}
}

func TestIgnoredPolicies(t *testing.T) {
	foreign := newPolicy("foreign", "binding-b")
	// Of another virtual cluster's binding of the same name: neither its
	// finalizer nor its status is ours to write.
	pinnedElsewhere := newPolicy("pinned-elsewhere", binding)
	pinnedElsewhere.Spec.MountNamespace = "mount-b"
	pinnedElsewhereDeleted := newPolicy("pinned-elsewhere-deleted", binding)
	pinnedElsewhereDeleted.Spec.MountNamespace = "mount-b"
	pinnedElsewhereDeleted.Finalizers = []string{kubeoceanv1alpha1.FinalizerResourceLeasingPolicy}
	pinnedElsewhereDeleted.DeletionTimestamp = &metav1.Time{Time: monday10}
	deletedWithoutUs := newPolicy("deleted", binding)
	deletedWithoutUs.Finalizers = []string{"example.com/other"}
	deletedWithoutUs.DeletionTimestamp = &metav1.Time{Time: monday10}
	f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{foreign, deletedWithoutUs, pinnedElsewhere, pinnedElsewhereDeleted})

	for _, name := range []string{"foreign", "deleted", "missing", "pinned-elsewhere", "pinned-elsewhere-deleted"} {
		result, err, actions := f.reconcile(name)
		if err != nil || result != (controller.Result{}) || len(actions) != 0 {
			t.Errorf("%s: %+v, %v, writes %v; want nothing", name, result, err, verbsOf(actions))
		}
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("events = %q", events)
	}
}

// patchedFinalizers checks that a write is a merge patch of the finalizer
// list alone, guarded by the resourceVersion (the syncer's physical
// identity may change nothing else of a policy), and returns the list.
func patchedFinalizers(t *testing.T, action clienttesting.Action) []string {
	t.Helper()
	patch, ok := action.(clienttesting.PatchAction)
	if !ok || patch.GetPatchType() != types.MergePatchType || patch.GetSubresource() != "" {
		t.Fatalf("write %v is not a merge patch of the policy", action)
	}
	var body struct {
		Metadata struct {
			ResourceVersion string   `json:"resourceVersion"`
			Finalizers      []string `json:"finalizers"`
		} `json:"metadata"`
	}
	var fields map[string]map[string]any
	if err := json.Unmarshal(patch.GetPatch(), &fields); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(patch.GetPatch(), &body); err != nil {
		t.Fatal(err)
	}
	if len(fields) != 1 || len(fields["metadata"]) != 2 || body.Metadata.ResourceVersion == "" || body.Metadata.Finalizers == nil {
		t.Fatalf("patch %s: want metadata.finalizers and metadata.resourceVersion only", patch.GetPatch())
	}
	return body.Metadata.Finalizers
}
