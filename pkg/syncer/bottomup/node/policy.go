package node

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/validation"
)

// selects reports whether a node selector picks node; a nil or empty
// selector picks every node. A selector that cannot be parsed picks none,
// so a broken selector never lends nodes by accident.
func selects(selector *corev1.NodeSelector, node *corev1.Node) bool {
	if selector == nil || len(selector.NodeSelectorTerms) == 0 {
		return true
	}
	parsed, err := nodeaffinity.NewNodeSelector(selector)
	if err != nil {
		return false
	}
	return parsed.Match(node)
}

// usable reports whether policy may lend nodes to the binding: it is for
// the binding, valid, and not being deleted (a deleted policy's nodes are
// reclaimed before its finalizer goes).
func usable(policy *kubeoceanv1alpha1.ResourceLeasingPolicy, bindingName string) bool {
	return policy.Spec.Cluster == bindingName &&
		policy.DeletionTimestamp == nil &&
		len(validation.ResourceLeasingPolicySpec(&policy.Spec)) == 0
}

// choosePolicy picks, of the usable policies selecting node, the earliest
// created; the name breaks ties. nil means node is not lent.
func choosePolicy(policies []*kubeoceanv1alpha1.ResourceLeasingPolicy, bindingName string, node *corev1.Node) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	var candidates []*kubeoceanv1alpha1.ResourceLeasingPolicy
	for _, p := range policies {
		if usable(p, bindingName) && selects(p.Spec.NodeSelector, node) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	return slices.MinFunc(candidates, func(a, b *kubeoceanv1alpha1.ResourceLeasingPolicy) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
