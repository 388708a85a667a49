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

package node

import (
	"testing"
	"time"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

// pinned pins a policy to a mount namespace.
func pinned(mount string) func(*kubeoceanv1alpha1.ResourceLeasingPolicy) {
	return func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.MountNamespace = mount }
}

// A policy pinned to another virtual cluster's binding of the same name
// (another mount namespace) has no say over this binding's nodes: being
// invalid does not freeze them, and editing it changes no confirmation
// token.
func TestPolicyPinnedElsewhereHasNoSay(t *testing.T) {
	f := newFixture(t)
	fixtures.MustAdd(f.t, f.bindings, binding())
	broken := func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) { p.Spec.TimeZone = "Europe/Berln" }
	theirs := policy("theirs", testNow.Add(-2*time.Hour), pinned("their-mount"), broken)
	fixtures.MustAdd(f.t, f.policies, theirs, policy("ours", testNow.Add(-time.Hour), pinned(testMount)))
	fixtures.MustAdd(f.t, f.physicalNodes, physicalNode("node-a", nil))
	f.sync("node-a")
	wantWrites(t, f, "create nodes")
	if events := drainEvents(f); len(events) != 0 {
		t.Fatalf("events = %q, want none", events)
	}

	edited := theirs.DeepCopy()
	edited.Generation++
	before := configToken(binding(), []*kubeoceanv1alpha1.ResourceLeasingPolicy{theirs})
	if after := configToken(binding(), []*kubeoceanv1alpha1.ResourceLeasingPolicy{edited}); after != before {
		t.Errorf("editing a policy pinned elsewhere changed the token %s to %s", before, after)
	}
	ours := policy("ours", testNow, pinned(testMount))
	editedOurs := ours.DeepCopy()
	editedOurs.Generation++
	if configToken(binding(), []*kubeoceanv1alpha1.ResourceLeasingPolicy{ours}) == configToken(binding(), []*kubeoceanv1alpha1.ResourceLeasingPolicy{editedOurs}) {
		t.Error("editing a policy pinned to the binding left the token as it was")
	}
}
