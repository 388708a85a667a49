package ownership

import (
	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// PolicyLendsTo tells whether policy lends to the binding named
// bindingName whose mount namespace is mountNamespace. A binding's name is
// unique only within its virtual cluster: two virtual clusters may each
// have a binding worker-1 to the same physical cluster. Its mount
// namespace is unique in the physical cluster (it belongs to exactly one
// binding), so a policy that names one lends to that binding alone; a
// policy that names none lends to every binding of its spec.cluster.
func PolicyLendsTo(policy *kubeoceanv1alpha1.ResourceLeasingPolicy, bindingName, mountNamespace string) bool {
	if policy.Spec.Cluster != bindingName {
		return false
	}
	return policy.Spec.MountNamespace == "" || policy.Spec.MountNamespace == mountNamespace
}

// PolicyPinned tells whether policy lends to one binding only, the one of
// its spec.mountNamespace. Only such a policy's reclaim finalizer speaks
// for a single binding: on a policy shared by name, it stands for every
// binding of that name, which no one syncer can see all of.
func PolicyPinned(policy *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
	return policy.Spec.MountNamespace != ""
}
