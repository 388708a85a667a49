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

package ownership

import (
	"testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestPolicyLendsTo(t *testing.T) {
	policy := func(cluster, mount string) *kubeoceanv1alpha1.ResourceLeasingPolicy {
		return &kubeoceanv1alpha1.ResourceLeasingPolicy{Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: cluster, MountNamespace: mount}}
	}
	cases := []struct {
		name          string
		policy        *kubeoceanv1alpha1.ResourceLeasingPolicy
		lends, pinned bool
	}{
		{name: "unpinned, same name: every binding of the name", policy: policy("worker-1", ""), lends: true},
		{name: "pinned to the binding's mount namespace", policy: policy("worker-1", "mount-a"), lends: true, pinned: true},
		// Another virtual cluster's binding worker-1, mounted elsewhere.
		{name: "pinned to another mount namespace", policy: policy("worker-1", "mount-b"), pinned: true},
		{name: "another binding name", policy: policy("worker-2", "")},
		{name: "another binding name, our mount namespace", policy: policy("worker-2", "mount-a"), pinned: true},
	}
	for _, tc := range cases {
		if got := PolicyLendsTo(tc.policy, "worker-1", "mount-a"); got != tc.lends {
			t.Errorf("%s: PolicyLendsTo = %v, want %v", tc.name, got, tc.lends)
		}
		if got := PolicyPinned(tc.policy); got != tc.pinned {
			t.Errorf("%s: PolicyPinned = %v, want %v", tc.name, got, tc.pinned)
		}
	}
}
