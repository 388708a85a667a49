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
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/validation"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Why nodes are frozen. A configuration the syncer cannot evaluate says
// nothing about which nodes to lend: reading it as "lend nothing" would
// drain every node over a typo, so the nodes keep their last known good
// state until the spec is fixed.

// bindingSelectorInvalid says why the binding's node selector cannot be
// evaluated, or "" when it can. It then freezes every node of the binding.
func bindingSelectorInvalid(binding *kubeoceanv1alpha1.ClusterBinding) string {
	errs := validation.NodeSelector(field.NewPath("spec", "nodeSelector"), binding.Spec.NodeSelector)
	if len(errs) == 0 {
		return ""
	}
	return fmt.Sprintf("the node selector of ClusterBinding %s is invalid: %v", binding.Name, errs.ToAggregate())
}

// invalidPolicyFor says why a policy of the binding that may lend node is
// invalid, or "" when none is. A policy may lend the nodes its selector
// picks, and every node when the selector itself cannot be parsed.
func invalidPolicyFor(policies []*kubeoceanv1alpha1.ResourceLeasingPolicy, binding borrower, node *corev1.Node) string {
	var reasons []string
	for _, p := range policies {
		if !binding.lentBy(p) || p.DeletionTimestamp != nil || !maySelect(p.Spec.NodeSelector, node) {
			continue
		}
		if problems := validity.problems(p); problems != "" {
			reasons = append(reasons, fmt.Sprintf("ResourceLeasingPolicy %s is invalid: %s", p.Name, problems))
		}
	}
	slices.Sort(reasons) // the lister's order is not stable; the message must be
	return strings.Join(reasons, "; ")
}

// maySelect is selects for selectors that may be invalid: one that cannot
// be parsed may select any node.
func maySelect(selector *corev1.NodeSelector, node *corev1.Node) bool {
	if len(validation.NodeSelector(field.NewPath("nodeSelector"), selector)) > 0 {
		return true
	}
	return selects(selector, node)
}

// frozenNodes remembers which physical nodes are frozen and why, so each
// reason is logged once per node and reported once on the binding, however
// often the nodes are reconciled.
type frozenNodes struct {
	mu      sync.Mutex
	reasons map[string]string // physical node -> reason
	nodes   map[string]int    // reason -> number of frozen nodes
}

func newFrozenNodes() *frozenNodes {
	return &frozenNodes{reasons: map[string]string{}, nodes: map[string]int{}}
}

// freeze records node as frozen for reason. It reports whether this is new
// for the node, and whether it is new for the reason.
func (f *frozenNodes) freeze(node, reason string) (newForNode, newReason bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, was := f.reasons[node]
	if was && old == reason {
		return false, false
	}
	if was {
		f.release(old)
	}
	f.reasons[node] = reason
	f.nodes[reason]++
	return true, f.nodes[reason] == 1
}

// thaw forgets node and reports whether it was frozen.
func (f *frozenNodes) thaw(node string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	reason, was := f.reasons[node]
	if was {
		delete(f.reasons, node)
		f.release(reason)
	}
	return was
}

// empty reports whether no node is frozen.
func (f *frozenNodes) empty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reasons) == 0
}

func (f *frozenNodes) release(reason string) {
	if f.nodes[reason]--; f.nodes[reason] <= 0 {
		delete(f.nodes, reason)
	}
}

// freeze leaves the virtual twin of physical node key exactly as it is: no
// taint, no drain, no removal, no capacity change. Nothing is retried: the
// binding or policy update that fixes the spec enqueues the node again.
func (c *Controller) freeze(ctx context.Context, key string, binding *kubeoceanv1alpha1.ClusterBinding, reason string) (controller.Result, error) {
	newForNode, newReason := c.frozen.freeze(key, reason)
	if newForNode {
		klog.FromContext(ctx).Info("Leaving the virtual node as it is until its configuration can be evaluated",
			"node", klog.KRef("", c.virtualNodeName(key)), "reason", reason)
	}
	if newReason && strings.HasPrefix(reason, kubeoceanv1alpha1.ReasonPhysicalClusterChanged) {
		c.recorder.Eventf(binding, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPhysicalClusterChanged,
			"Virtual nodes are left as they are (no taint, drain, removal or capacity change): %s", reason)
	} else if newReason {
		c.recorder.Eventf(binding, corev1.EventTypeWarning, kubeoceanv1alpha1.EventConfigurationInvalid,
			"Virtual nodes are left as they are (no taint, drain, removal or capacity change) until this is fixed: %s", reason)
	}
	return controller.Result{}, nil
}

// thaw notes that key is reconciled normally again.
func (c *Controller) thaw(ctx context.Context, key string) {
	if c.frozen.thaw(key) {
		klog.FromContext(ctx).Info("Configuration can be evaluated again; reconciling the virtual node",
			"node", klog.KRef("", c.virtualNodeName(key)))
	}
}
