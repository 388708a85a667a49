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

package node

import (
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/validation"
)

// borrower is the binding policies lend to: its name, which only its
// virtual cluster keeps unique, and its mount namespace, which the
// physical cluster does.
type borrower struct{ name, mountNamespace string }

func borrowerOf(binding *kubeoceanv1alpha1.ClusterBinding) borrower {
	return borrower{name: binding.Name, mountNamespace: binding.Spec.MountNamespace}
}

// lentBy tells whether policy lends to the binding (ownership.PolicyLendsTo).
func (b borrower) lentBy(policy *kubeoceanv1alpha1.ResourceLeasingPolicy) bool {
	return ownership.PolicyLendsTo(policy, b.name, b.mountNamespace)
}

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
func usable(policy *kubeoceanv1alpha1.ResourceLeasingPolicy, binding borrower) bool {
	return binding.lentBy(policy) &&
		policy.DeletionTimestamp == nil &&
		validity.problems(policy) == ""
}

// validity memoizes policy validation. Each node reconcile looks at every
// policy and validation loads the time zone, so with a thousand nodes the
// same few specs would be validated thousands of times. Entries are keyed
// by UID and resourceVersion, which no two different specs share, so one
// memo serves every syncer of the process.
var validity = &policyValidity{byVersion: map[string]string{}}

// maxValidityEntries bounds the memo; it is cleared when full, which only
// costs validating again.
const maxValidityEntries = 4096

type policyValidity struct {
	mu        sync.Mutex
	byVersion map[string]string
}

// problems is why policy's spec is invalid, or "" when it is valid.
func (v *policyValidity) problems(policy *kubeoceanv1alpha1.ResourceLeasingPolicy) string {
	if policy.ResourceVersion == "" { // not from an API server: nothing to key on
		return validate(policy)
	}
	key := string(policy.UID) + "/" + policy.ResourceVersion
	v.mu.Lock()
	defer v.mu.Unlock()
	if problems, ok := v.byVersion[key]; ok {
		return problems
	}
	if len(v.byVersion) >= maxValidityEntries {
		clear(v.byVersion)
	}
	problems := validate(policy)
	v.byVersion[key] = problems
	return problems
}

func validate(policy *kubeoceanv1alpha1.ResourceLeasingPolicy) string {
	if errs := validation.ResourceLeasingPolicySpec(&policy.Spec); len(errs) > 0 {
		return errs.ToAggregate().Error()
	}
	return ""
}

// choosePolicy picks, of the usable policies selecting node, the earliest
// created; the name breaks ties. nil means node is not lent.
func choosePolicy(policies []*kubeoceanv1alpha1.ResourceLeasingPolicy, binding borrower, node *corev1.Node) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	var candidates []*kubeoceanv1alpha1.ResourceLeasingPolicy
	for _, p := range policies {
		if usable(p, binding) && selects(p.Spec.NodeSelector, node) {
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
