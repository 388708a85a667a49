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

package unbind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
)

// sweep removes what the binding left behind once its pods and nodes are
// gone: its host port placeholders (which go with their virtual nodes
// anyway, unless the virtual cluster's garbage collector is behind), the
// physical copies of ConfigMaps, Secrets, PVCs and PVs it made, and the
// holder claims of the volumes it provisioned (whose volumes stay, with
// their data, unless the operator asked otherwise: see keepClaimData),
// and its marks (finalizer, labels, annotations) on the virtual objects
// they were copied from, so those look as they did before the binding.
func (c *Controller) sweep(ctx context.Context, binding *kubeoceanv1alpha1.ClusterBinding) error {
	// Before the virtual Secrets lose the used-by-pv mark that finds them.
	errs := []error{c.deleteCSISecretCopies(ctx), c.deletePlaceholders(ctx)}
	kept, err := c.sweepPhysical(ctx, deletesVolumes(binding))
	errs = append(errs, err)
	// Listed even when the sweep failed part way: those volumes are kept
	// already, and the next pass lists only what it keeps itself.
	c.reportRetained(ctx, binding, kept)
	synced := kubeoceanv1alpha1.SyncedByLabel(c.opts.ClusterID)
	for _, ops := range c.virtualKinds() {
		objs, err := ops.list(ctx, synced)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range objs {
			if err := c.unmark(ctx, ops, obj); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Last, once nothing of the binding is left in it: another binding may
	// take the namespace from then on.
	return c.releaseMountNamespace(ctx)
}

// releaseMountNamespace deletes the mount namespace's claim when it
// records this binding (by UID: a successor that took it over keeps it),
// on the version read, so a claim taken over meanwhile stays.
func (c *Controller) releaseMountNamespace(ctx context.Context) error {
	configMaps := c.opts.PhysicalKube.CoreV1().ConfigMaps(c.opts.MountNamespace)
	claim, err := configMaps.Get(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading the claim of mount namespace %s: %w", c.opts.MountNamespace, err)
	case claim.Data[kubeoceanv1alpha1.ClaimKeyBindingUID] != string(c.opts.BindingUID):
		return nil
	}
	err = configMaps.Delete(ctx, claim.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &claim.UID, ResourceVersion: &claim.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("releasing mount namespace %s: %w", c.opts.MountNamespace, err)
	}
	klog.FromContext(ctx).Info("Released the mount namespace", "mountNamespace", c.opts.MountNamespace)
	return nil
}

// sweepPhysical deletes the binding's physical copies and holder claims.
// An object whose keep step fails is not deleted: its data comes first.
func (c *Controller) sweepPhysical(ctx context.Context, deleteVolumes bool) ([]retainedVolume, error) {
	logger := klog.FromContext(ctx)
	var kept []retainedVolume
	var errs []error
	for _, ops := range c.physicalKinds(deleteVolumes) {
		objs, err := ops.list(ctx, c.owner.Selector())
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, obj := range objs {
			if !ops.belongs(obj) {
				continue
			}
			var volume *retainedVolume
			if ops.keep != nil {
				if volume, err = ops.keep(ctx, obj); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := ops.delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
				continue
			}
			if volume != nil {
				kept = append(kept, *volume)
			}
			logger.V(2).Info("Deleted leftover physical object", "kind", ops.kind, "object", klog.KObj(obj))
		}
	}
	return kept, errors.Join(errs...)
}

// unmark removes the binding's finalizer, synced-by label and mapping
// annotations from a virtual object, and the managed-by label when no other
// binding still syncs it.
func (c *Controller) unmark(ctx context.Context, ops kindOps, obj metav1.Object) error {
	labels := map[string]any{kubeoceanv1alpha1.SyncedByLabel(c.opts.ClusterID): nil}
	others := false
	for k := range obj.GetLabels() {
		if strings.HasPrefix(k, kubeoceanv1alpha1.LabelSyncedByPrefix) && k != kubeoceanv1alpha1.SyncedByLabel(c.opts.ClusterID) {
			others = true
		}
	}
	if !others {
		labels[kubeoceanv1alpha1.LabelManagedBy] = nil
		labels[kubeoceanv1alpha1.LabelUsedByPV] = nil
	}
	finalizer := kubeoceanv1alpha1.Finalizer(c.opts.ClusterID)
	finalizers := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == finalizer })
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": obj.GetResourceVersion(),
		"finalizers":      finalizers,
		"labels":          labels,
		"annotations": map[string]any{
			kubeoceanv1alpha1.AnnotationPhysicalName:      nil,
			kubeoceanv1alpha1.AnnotationPhysicalNamespace: nil,
		},
	}})
	if err != nil {
		return err
	}
	return ops.patch(ctx, obj, patch)
}

// deleteCSISecretCopies deletes the copies of the virtual Secrets this
// binding marked as CSI node-publish Secrets of its volumes. Those copies
// keep the Secret's own namespace and name instead of living in the mount
// namespace, so the mount-namespace sweep does not reach them. A physical
// Secret there that is not this binding's copy of that virtual Secret
// (another binding's copy of the same Secret included) is left alone.
func (c *Controller) deleteCSISecretCopies(ctx context.Context) error {
	selector := kubeoceanv1alpha1.SyncedByLabel(c.opts.ClusterID) + "," + kubeoceanv1alpha1.LabelUsedByPV
	virtual, err := c.opts.VirtualKube.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	var errs []error
	for _, secret := range virtual.Items {
		physical, err := c.opts.PhysicalKube.CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			errs = append(errs, fmt.Errorf("reading the CSI Secret copy %s/%s: %w", secret.Namespace, secret.Name, err))
			continue
		}
		annotations := physical.Annotations
		if !c.owner.Owns(physical) ||
			annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != secret.Namespace ||
			annotations[kubeoceanv1alpha1.AnnotationVirtualName] != secret.Name {
			continue
		}
		err = c.opts.PhysicalKube.CoreV1().Secrets(physical.Namespace).Delete(ctx, physical.Name, uidPrecondition(physical))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted leftover physical object", "kind", "CSI Secret", "object", klog.KObj(physical))
	}
	return errors.Join(errs...)
}

// deletePlaceholders deletes the binding's host port placeholder pods, in
// whatever virtual namespace they were made.
func (c *Controller) deletePlaceholders(ctx context.Context) error {
	selector := c.owner.Selector() + "," + hostports.LabelPlaceholder + "=true"
	pods, err := c.opts.VirtualKube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err
	}
	var errs []error
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !c.owner.Owns(pod) || !hostports.IsPlaceholder(pod) {
			continue
		}
		options := uidPrecondition(pod)
		options.GracePeriodSeconds = ptr.To[int64](0)
		if err := c.opts.VirtualKube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, options); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		klog.FromContext(ctx).V(2).Info("Deleted leftover host port placeholder", "pod", klog.KObj(pod))
	}
	return errors.Join(errs...)
}
