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

package unbind

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Unbinding releases the reclaim finalizer only where no other binding can
// rely on it. Another virtual cluster also has a binding worker-1, mounted
// in other-mount.
func TestUnbindingReleasesOnlyPoliciesNoOtherBindingRelies(t *testing.T) {
	reclaim := kubeoceanv1alpha1.FinalizerResourceLeasingPolicy
	newPolicy := func(name, pinnedTo string, deleting bool) *kubeoceanv1alpha1.ResourceLeasingPolicy {
		p := &kubeoceanv1alpha1.ResourceLeasingPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1", Finalizers: []string{reclaim, "example.com/keep"}},
			Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: bindingName, MountNamespace: pinnedTo},
		}
		if deleting {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	f := newFixture(t, newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer), nil, nil,
		newPolicy("pinned-here", mount, false),
		newPolicy("pinned-elsewhere", "other-mount", false),
		newPolicy("pinned-elsewhere-deleting", "other-mount", true),
		newPolicy("shared", "", false),
		newPolicy("shared-deleting", "", true))
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		// Ours alone.
		"pinned-here": {"example.com/keep"},
		// The other binding's: never ours to touch.
		"pinned-elsewhere":          {reclaim, "example.com/keep"},
		"pinned-elsewhere-deleting": {reclaim, "example.com/keep"},
		// Live and shared by name: another binding worker-1 may rely on it.
		"shared": {reclaim, "example.com/keep"},
		// Being deleted, it lends to nobody, and our nodes are reclaimed.
		"shared-deleting": {"example.com/keep"},
	} {
		p, err := f.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.Finalizers, want) {
			t.Errorf("policy %s finalizers = %v, want %v", name, p.Finalizers, want)
		}
	}
	var kept []string
	for len(f.recorder.Events) > 0 {
		if e := <-f.recorder.Events; strings.Contains(e, kubeoceanv1alpha1.EventPolicyFinalizerKept) {
			kept = append(kept, e)
		}
	}
	if len(kept) != 1 || !strings.Contains(kept[0], "ResourceLeasingPolicies shared keep") || !strings.Contains(kept[0], "spec.mountNamespace") {
		t.Errorf("events %q, want one %s naming only the policy shared", kept, kubeoceanv1alpha1.EventPolicyFinalizerKept)
	}
	if got := f.binding(t).Finalizers; len(got) != 0 {
		t.Errorf("binding finalizers = %v, want the syncer's released", got)
	}
}
