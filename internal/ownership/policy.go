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
