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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Owner is the identity of one binding.
type Owner struct {
	ClusterID  string
	BindingUID types.UID
}

// Of is the identity of binding.
func Of(binding *kubeoceanv1alpha1.ClusterBinding) Owner {
	return Owner{ClusterID: binding.Spec.ClusterID, BindingUID: binding.UID}
}

// Stamp sets the identity labels on labels (which may be nil) and returns
// them; labels a user copied from a virtual object are overwritten.
func (o Owner) Stamp(labels map[string]string) map[string]string {
	if labels == nil {
		labels = make(map[string]string, 3)
	}
	labels[kubeoceanv1alpha1.LabelManagedBy] = kubeoceanv1alpha1.ManagedByKubeocean
	labels[kubeoceanv1alpha1.LabelClusterID] = o.ClusterID
	labels[kubeoceanv1alpha1.LabelBindingUID] = string(o.BindingUID)
	return labels
}

// Selector selects the binding's objects.
func (o Owner) Selector() string {
	return kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean + "," +
		kubeoceanv1alpha1.LabelBindingUID + "=" + string(o.BindingUID)
}

// Owns tells whether obj carries the binding's identity.
func (o Owner) Owns(obj metav1.Object) bool {
	return o.BindingUID != "" && obj.GetLabels()[kubeoceanv1alpha1.LabelBindingUID] == string(o.BindingUID)
}

// Legacy tells an object Kubeocean made before objects carried a binding's
// identity: managed-by, but no binding UID. Whose it is only its mapping
// can prove (the virtual object it names must name it back, with the same
// UID where one is recorded); a syncer adopts it (stamps its identity) only
// then, and otherwise never touches it.
func Legacy(obj metav1.Object) bool {
	labels := obj.GetLabels()
	_, stamped := labels[kubeoceanv1alpha1.LabelBindingUID]
	return !stamped && labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean
}
