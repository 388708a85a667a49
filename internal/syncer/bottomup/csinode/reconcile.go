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

package csinode

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/bottomup/nodeowner"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// reconcile makes the virtual CSINode of physical node physicalName mirror
// the physical CSINode while both the virtual node and the physical CSINode
// exist, and removes it otherwise.
func (c *Controller) reconcile(ctx context.Context, physicalName string) (controller.Result, error) {
	virtualName := kubeoceanv1alpha1.VirtualNodeName(c.clusterID, physicalName)
	existing, err := orNil(c.virtualCSINodes.Get(virtualName))
	if err != nil {
		return controller.Result{}, err
	}
	node, err := orNil(c.virtualNodes.Get(virtualName))
	if err != nil {
		return controller.Result{}, err
	}
	if node != nil && (!c.owns(node) || kubeoceanv1alpha1.PhysicalNodeNameOf(node) != physicalName) {
		node = nil
	}
	physical, err := orNil(c.physicalCSINodes.Get(physicalName))
	if err != nil {
		return controller.Result{}, err
	}

	switch {
	case node == nil || physical == nil:
		return controller.Result{}, c.deleteMirror(ctx, existing)
	case existing != nil && !c.owns(existing):
		return controller.Result{}, c.conflict(node, existing)
	case existing == nil:
		desired, _ := c.mirror(nil, node, physical.Spec.Drivers, true)
		return controller.Result{}, c.createMirror(ctx, node, desired)
	default:
		return controller.Result{}, c.updateMirror(ctx, node, existing, physical.Spec.Drivers)
	}
}

// orNil turns a lister's NotFound into a nil object.
func orNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// mirror is current (nil: a new CSINode) with our labels, the owner
// reference to node and the drivers one step closer to drivers; see
// stepTowards, which also tells whether this is the last step. Labels and
// owner references of others are kept.
func (c *Controller) mirror(current *storagev1.CSINode, node *corev1.Node, drivers []storagev1.CSINodeDriver, allocatableMutable bool) (*storagev1.CSINode, bool) {
	csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node.Name}}
	if current != nil {
		csiNode = current.DeepCopy()
	}
	if csiNode.Labels == nil {
		csiNode.Labels = map[string]string{}
	}
	csiNode.Labels[kubeoceanv1alpha1.LabelManagedBy] = kubeoceanv1alpha1.ManagedByKubeocean
	csiNode.Labels[kubeoceanv1alpha1.LabelClusterID] = c.clusterID
	if csiNode.Annotations == nil {
		csiNode.Annotations = map[string]string{}
	}
	kubeoceanv1alpha1.SetPhysicalNodeName(csiNode.Labels, csiNode.Annotations, kubeoceanv1alpha1.PhysicalNodeNameOf(node))
	csiNode.OwnerReferences = nodeowner.Set(csiNode.OwnerReferences, node)
	var complete bool
	csiNode.Spec.Drivers, complete = stepTowards(csiNode.Spec.Drivers, drivers, allocatableMutable)
	return csiNode, complete
}

// stepTowards returns the drivers to write next to move current to desired.
// The API server rejects changing a driver's nodeID or topologyKeys in place
// (and, before Kubernetes 1.35, its allocatable count), so such a driver is
// left out in this step and added back in the next, as the kubelet does; ok
// is false then.
func stepTowards(current, desired []storagev1.CSINodeDriver, allocatableMutable bool) (next []storagev1.CSINodeDriver, ok bool) {
	ok = true
	for _, want := range desired {
		i := slices.IndexFunc(current, func(d storagev1.CSINodeDriver) bool { return d.Name == want.Name })
		if i >= 0 && !changeableInPlace(current[i], want, allocatableMutable) {
			ok = false
			continue
		}
		next = append(next, *want.DeepCopy())
	}
	return next, ok
}

func changeableInPlace(from, to storagev1.CSINodeDriver, allocatableMutable bool) bool {
	return from.NodeID == to.NodeID && slices.Equal(from.TopologyKeys, to.TopologyKeys) &&
		(allocatableMutable || equality.Semantic.DeepEqual(from.Allocatable, to.Allocatable))
}

func (c *Controller) createMirror(ctx context.Context, node *corev1.Node, csiNode *storagev1.CSINode) error {
	_, err := c.client.CSINodes().Create(ctx, csiNode, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Either our cache lags behind our own create (its event enqueues
		// the key again) or a foreign CSINode, which the scoped cache does
		// not show, holds the name.
		existing, getErr := c.client.CSINodes().Get(ctx, csiNode.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("CSINode %s exists but cannot be read: %w", csiNode.Name, getErr)
		}
		if !c.owns(existing) {
			return c.conflict(node, existing)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating CSINode %s: %w", csiNode.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Created virtual CSINode", "csiNode", klog.KObj(csiNode), "drivers", len(csiNode.Spec.Drivers))
	return nil
}

func (c *Controller) updateMirror(ctx context.Context, node *corev1.Node, existing *storagev1.CSINode, drivers []storagev1.CSINodeDriver) error {
	logger := klog.FromContext(ctx)
	desired, complete := c.mirror(existing, node, drivers, true)
	if equality.Semantic.DeepEqual(existing, desired) {
		return nil
	}
	_, err := c.client.CSINodes().Update(ctx, desired, metav1.UpdateOptions{})
	if apierrors.IsInvalid(err) {
		// A virtual cluster older than 1.35 keeps allocatable counts
		// immutable: take the changed drivers out now, add them back next.
		fallback, fallbackComplete := c.mirror(existing, node, drivers, false)
		if !equality.Semantic.DeepEqual(fallback, desired) {
			logger.V(2).Info("Virtual CSINode rejected an in-place driver change; replacing the drivers in two steps",
				"csiNode", klog.KObj(existing), "err", err)
			desired, complete = fallback, fallbackComplete
			_, err = c.client.CSINodes().Update(ctx, desired, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("updating CSINode %s: %w", existing.Name, err)
	}
	// When a driver had to be taken out first, our own update's event
	// enqueues the key again and the next pass adds it back.
	logger.V(2).Info("Updated virtual CSINode", "csiNode", klog.KObj(desired), "drivers", len(desired.Spec.Drivers), "complete", complete)
	return nil
}

// deleteMirror removes our virtual CSINode; one that is not ours is left
// alone.
func (c *Controller) deleteMirror(ctx context.Context, existing *storagev1.CSINode) error {
	if existing == nil || !c.owns(existing) {
		return nil
	}
	err := c.client.CSINodes().Delete(ctx, existing.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &existing.UID},
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting CSINode %s: %w", existing.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted virtual CSINode", "csiNode", klog.KObj(existing))
	return nil
}

// conflict tells the user on the virtual node that a foreign CSINode holds
// its name. Retrying cannot help until someone removes it.
func (c *Controller) conflict(node *corev1.Node, existing *storagev1.CSINode) error {
	c.recorder.Eventf(node, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonCSINodeConflict,
		"CSINode %s exists and is not managed by kubeocean cluster %q; the CSI drivers of physical node %s are not mirrored",
		existing.Name, c.clusterID, kubeoceanv1alpha1.PhysicalNodeNameOf(node))
	return controller.Terminal(fmt.Errorf("CSINode %s is not managed by kubeocean cluster %q; leaving it alone", existing.Name, c.clusterID))
}
