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
