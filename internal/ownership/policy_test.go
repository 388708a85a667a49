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
