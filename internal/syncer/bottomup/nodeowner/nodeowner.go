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

// Package nodeowner points the mirrors the bottom-up side keeps per
// virtual node (its Lease, its CSINode) at that node, so the garbage
// collector removes them with it.
package nodeowner

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Set returns refs with the Node owner reference pointing at node. A
// reference to an earlier node of the same name is replaced, not kept: the
// garbage collector would delete an object whose owner UID no longer
// exists. Other owner references stay, in their order; refs is not
// changed.
func Set(refs []metav1.OwnerReference, node *corev1.Node) []metav1.OwnerReference {
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	for _, ref := range refs {
		if ref.APIVersion == want.APIVersion && ref.Kind == want.Kind && ref.Name == want.Name {
			continue
		}
		out = append(out, ref)
	}
	return append(out, want)
}
