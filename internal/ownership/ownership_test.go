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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestOwnership(t *testing.T) {
	ours := Owner{ClusterID: "cls-1", BindingUID: "uid-a"}
	// Another virtual cluster may bind the same physical cluster under
	// the same cluster ID: only the binding UID tells the two apart.
	sameClusterID := Owner{ClusterID: "cls-1", BindingUID: "uid-b"}
	managed := map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	cases := []struct {
		name                     string
		labels                   map[string]string
		owns, theirs, legacy, in bool
	}{
		{name: "ours", labels: ours.Stamp(map[string]string{"app": "web"}), owns: true, in: true},
		{name: "same cluster ID, other binding", labels: sameClusterID.Stamp(nil), theirs: true},
		{name: "legacy", labels: managed, legacy: true},
		{name: "not Kubeocean's", labels: map[string]string{"app": "web"}},
	}
	selector, err := labels.Parse(ours.Selector())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		obj := &metav1.ObjectMeta{Labels: tc.labels}
		if got := ours.Owns(obj); got != tc.owns {
			t.Errorf("%s: Owns = %v", tc.name, got)
		}
		if got := sameClusterID.Owns(obj); got != tc.theirs {
			t.Errorf("%s: the other binding Owns = %v", tc.name, got)
		}
		if got := Legacy(obj); got != tc.legacy {
			t.Errorf("%s: Legacy = %v", tc.name, got)
		}
		if got := selector.Matches(labels.Set(tc.labels)); got != tc.in {
			t.Errorf("%s: selected = %v", tc.name, got)
		}
	}
	if (Owner{}).Owns(&metav1.ObjectMeta{Labels: map[string]string{kubeoceanv1alpha1.LabelBindingUID: ""}}) {
		t.Error("an owner without a UID owns an object with an empty UID label")
	}
}
