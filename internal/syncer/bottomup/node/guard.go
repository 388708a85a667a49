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
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Guards against configuration that parses but cannot be right. Whether a
// node is lent is decided by the binding's and the policies' selectors; a
// valid selector that matches nothing, a policy deleted or renamed, or a
// kubeconfig that reaches another cluster would otherwise read as "lend
// nothing" and drain every node. Removals that follow from the physical
// side (a node deleted, the binding deleted) are not guarded.

// DefaultMaxNodeRemovalFraction is the share of a binding's virtual nodes
// one configuration may remove without the operator's confirmation.
const DefaultMaxNodeRemovalFraction = 0.5

// shareCacheTTL bounds how long the count of nodes a configuration removes
// is reused for the same configuration: physical label changes move it
// without changing the configuration's token.
const shareCacheTTL = 10 * time.Second

// physicalClusterChanged says why the physical cluster the syncer reaches
// is not the one the binding is bound to, or "" when it is (or when either
// identity is unknown: nothing was pinned yet, or the syncer could not read
// it).
func physicalClusterChanged(binding *kubeoceanv1alpha1.ClusterBinding, observed string) string {
	pinned := binding.Status.PhysicalClusterUID
	if pinned == "" || observed == "" || pinned == observed || binding.Annotations[kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster] == observed {
		return ""
	}
	return fmt.Sprintf("%s: the kubeconfig of ClusterBinding %s reaches the physical cluster whose kube-system namespace has UID %s, "+
		"but the binding is bound to %s; to accept the new cluster, annotate the binding %s=%s",
		kubeoceanv1alpha1.ReasonPhysicalClusterChanged, binding.Name, observed, pinned,
		kubeoceanv1alpha1.AnnotationAcceptPhysicalCluster, observed)
}

// configToken identifies the configuration that decides which nodes are
// lent: the binding's spec generation and the generations of its
// policies. A confirmation names it, so that it confirms this change and no
// later one.
func configToken(binding *kubeoceanv1alpha1.ClusterBinding, policies []*kubeoceanv1alpha1.ResourceLeasingPolicy) string {
	parts := []string{strconv.FormatInt(binding.Generation, 10)}
	for _, p := range policies {
		if borrowerOf(binding).lentBy(p) {
			parts = append(parts, fmt.Sprintf("%s/%d/%t", p.Name, p.Generation, p.DeletionTimestamp != nil))
		}
	}
	slices.Sort(parts[1:])
	sum := sha256.Sum256([]byte(strings.Join(parts, ",")))
	return hex.EncodeToString(sum[:5])
}

// removalHold says why the configuration-driven removal of the virtual twin
// of physical node key waits for the operator, or "" when it may go ahead:
// confirmed, or a node without pods within the share of nodes one change
// may remove.
func (c *Controller) removalHold(key string, binding *kubeoceanv1alpha1.ClusterBinding, token string) (string, error) {
	if binding.Annotations[kubeoceanv1alpha1.AnnotationConfirmNodeRemoval] == token {
		return "", nil
	}
	// A physical node without a twin has nothing to remove.
	if _, err := c.virtualNodes.Get(c.virtualNodeName(key)); apierrors.IsNotFound(err) {
		return "", nil
	}
	if pods, err := c.activePods(c.virtualNodeName(key)); err != nil || pods > 0 {
		return fmt.Sprintf("the virtual node runs %d pods", pods), err
	}
	removed, total, err := c.removalShare(binding, token)
	if err != nil || total == 0 || float64(removed)/float64(total) <= c.maxRemovalFraction {
		return "", err
	}
	return fmt.Sprintf("the configuration removes %d of the binding's %d virtual nodes, more than %.0f%%",
		removed, total, c.maxRemovalFraction*100), nil
}

// activePods counts the pods on a virtual node that have not finished.
func (c *Controller) activePods(node string) (int, error) {
	objs, err := c.virtualPods.ByIndex(byNodeName, node)
	if err != nil {
		return 0, err
	}
	active := 0
	for _, obj := range objs {
		if pod := obj.(*corev1.Pod); pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			active++
		}
	}
	return active, nil
}

// shareCount is a cached count of the virtual nodes a configuration removes.
type shareCount struct {
	mu             sync.Mutex
	token          string
	at             time.Time
	removed, total int
}

// removalShare counts the binding's virtual nodes and those the current
// configuration does not lend. A physical node the (selector-scoped) cache
// does not hold counts as removed: the count errs towards holding.
func (c *Controller) removalShare(binding *kubeoceanv1alpha1.ClusterBinding, token string) (removed, total int, err error) {
	c.share.mu.Lock()
	defer c.share.mu.Unlock()
	now := c.clock.Now()
	if c.share.token == token && now.Sub(c.share.at) < shareCacheTTL {
		return c.share.removed, c.share.total, nil
	}
	vnodes, err := c.virtualNodes.List(labels.Everything())
	if err != nil {
		return 0, 0, err
	}
	policies, err := c.policies.List(labels.Everything())
	if err != nil {
		return 0, 0, err
	}
	for _, vnode := range vnodes {
		names := physicalNameOf(vnode)
		if len(names) == 0 {
			continue
		}
		total++
		physical, err := c.physicalNodes.Get(names[0])
		if err != nil || !selects(binding.Spec.NodeSelector, physical) || choosePolicy(policies, c.borrower, physical) == nil {
			removed++
		}
	}
	c.share.token, c.share.at, c.share.removed, c.share.total = token, now, removed, total
	return removed, total, nil
}

// physicalNodeGone tells a physical node deleted from one that left the
// selector-scoped cache because the selector changed, with a live read.
// Without a client every absent node counts as gone.
func (c *Controller) physicalNodeGone(ctx context.Context, key string) (bool, error) {
	if c.physicalNodesClient == nil {
		return true, nil
	}
	_, err := c.physicalNodesClient.Nodes().Get(ctx, key, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	}
	return false, nil
}

// holdRemoval leaves the virtual twin of key as it is, like freeze, and
// reports the held removal once per configuration: an event and the
// binding's NodeRemovalHeld condition naming the token that confirms it.
func (c *Controller) holdRemoval(ctx context.Context, key string, binding *kubeoceanv1alpha1.ClusterBinding, token, removal, why string) (controller.Result, error) {
	newForNode, newToken := c.held.freeze(key, token)
	if newForNode {
		klog.FromContext(ctx).Info("Holding the removal of a virtual node until the operator confirms it",
			"node", klog.KRef("", c.virtualNodeName(key)), "removal", removal, "hold", why, "token", token)
	}
	if !newToken {
		return controller.Result{}, nil
	}
	message := fmt.Sprintf("A configuration change would remove virtual nodes (%s; first held: %s, because %s); they are left as they are. "+
		"To remove them, by eviction that respects PodDisruptionBudgets: kubectl annotate clusterbinding %s %s=%s --overwrite",
		removal, c.virtualNodeName(key), why, binding.Name, kubeoceanv1alpha1.AnnotationConfirmNodeRemoval, token)
	c.recorder.Event(binding, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonNodeRemovalUnconfirmed, message)
	if err := c.setHeldCondition(ctx, metav1.ConditionTrue, kubeoceanv1alpha1.ReasonNodeRemovalUnconfirmed, message); err != nil {
		c.held.thaw(key) // the retry reports it again
		return controller.Result{}, err
	}
	return controller.Result{}, nil
}

// release notes that key is no longer held, and clears the condition once
// no node is. The first node reconciled normally also says so, once per
// start: the condition then shows on every binding, and one held by a
// syncer that restarted since is cleared.
func (c *Controller) release(ctx context.Context, key string) error {
	thawed := c.held.thaw(key)
	first := c.heldReported.CompareAndSwap(false, true)
	if (!thawed && !first) || !c.held.empty() {
		return nil
	}
	if err := c.setHeldCondition(ctx, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonNoNodeRemovalHeld, "No virtual node removal waits for confirmation."); err != nil {
		c.heldReported.Store(false)
		return err
	}
	return nil
}

// setHeldCondition writes the binding's NodeRemovalHeld condition when it
// differs. Only this condition is changed; the manager's are kept.
func (c *Controller) setHeldCondition(ctx context.Context, status metav1.ConditionStatus, reason, message string) error {
	if c.bindingsClient == nil {
		return nil
	}
	binding, err := c.bindings.Get(c.bindingName)
	if err != nil {
		return client404(err)
	}
	current := meta.FindStatusCondition(binding.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionNodeRemovalHeld)
	if current != nil && current.Status == status && current.Reason == reason && current.Message == message {
		return nil
	}
	updated := binding.DeepCopy()
	meta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{
		Type: kubeoceanv1alpha1.ClusterBindingConditionNodeRemovalHeld, Status: status, Reason: reason, Message: message,
		ObservedGeneration: binding.Generation,
	})
	_, err = c.bindingsClient.ClusterBindings().UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	return client404(err)
}

func client404(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
