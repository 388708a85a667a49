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

package nodeowner

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSet(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vnode", UID: "uid-now"}}
	current := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "vnode", UID: "uid-now"}
	other := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "vnode", UID: "ds"}
	otherNode := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "elsewhere", UID: "uid-elsewhere"}
	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		want []metav1.OwnerReference
	}{
		{"none", nil, []metav1.OwnerReference{current}},
		{"already", []metav1.OwnerReference{current}, []metav1.OwnerReference{current}},
		{"earlier node of the name", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "vnode", UID: "uid-before"}}, []metav1.OwnerReference{current}},
		{"others stay", []metav1.OwnerReference{other, otherNode}, []metav1.OwnerReference{other, otherNode, current}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.refs)
			if got := Set(tc.refs, node); !slices.Equal(got, tc.want) {
				t.Errorf("Set(%+v) = %+v, want %+v", tc.refs, got, tc.want)
			}
			if !slices.Equal(tc.refs, before) {
				t.Errorf("Set changed its argument to %+v", tc.refs)
			}
		})
	}
}
