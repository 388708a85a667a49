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

package provision

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func (c *Controller) reconcile(ctx context.Context, k key) (controller.Result, error) {
	switch k.kind {
	case kindClass:
		return controller.Result{}, c.syncClass(ctx, k.name)
	case kindClaim:
		return c.syncClaim(ctx, k.namespace, k.name)
	case kindVolume:
		return controller.Result{}, c.syncVolume(ctx, k.name)
	}
	return controller.Result{}, nil
}

func orNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// syncClass keeps the virtual StorageClass of the physical class name.
func (c *Controller) syncClass(ctx context.Context, name string) error {
	physical, err := orNil(c.physicalClasses.Get(name))
	if err != nil {
		return err
	}
	virtualName := VirtualClassName(c.clusterID, name)
	existing, err := orNil(c.virtualClasses.Get(virtualName))
	if err != nil {
		return err
	}
	if existing != nil && existing.Parameters[kubeoceanv1alpha1.ParameterPhysicalStorageClass] != name {
		return nil // not ours
	}
	logger := klog.FromContext(ctx).WithValues("storageClass", virtualName)
	classes := c.virtual.StorageV1().StorageClasses()
	if physical == nil {
		if existing == nil {
			return nil
		}
		err := classes.Delete(ctx, virtualName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		logger.V(2).Info("Deleted the virtual StorageClass of a physical class that is gone")
		return nil
	}
	desired := c.virtualClass(physical)
	switch {
	case existing == nil:
		_, err := classes.Create(ctx, desired, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		logger.V(2).Info("Created the virtual StorageClass of a physical class")
	case !ptr.Equal(existing.ReclaimPolicy, desired.ReclaimPolicy) || !slices.Equal(existing.MountOptions, desired.MountOptions):
		// Immutable: made again on the deletion's event.
		err := classes.Delete(ctx, virtualName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &existing.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	case !ptr.Equal(existing.AllowVolumeExpansion, desired.AllowVolumeExpansion):
		updated := existing.DeepCopy()
		updated.AllowVolumeExpansion = desired.AllowVolumeExpansion
		if _, err := classes.Update(ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (c *Controller) virtualClass(physical *storagev1.StorageClass) *storagev1.StorageClass {
	reclaim := corev1.PersistentVolumeReclaimDelete
	if physical.ReclaimPolicy != nil {
		reclaim = *physical.ReclaimPolicy
	}
	return &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: VirtualClassName(c.clusterID, physical.Name), Labels: c.ownedLabels()},
		Provisioner: ProvisionerName(c.clusterID),
		Parameters:  map[string]string{kubeoceanv1alpha1.ParameterPhysicalStorageClass: physical.Name},
		// The volume is made where the pod lands: on the physical node
		// behind the virtual node the scheduler chose.
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
		ReclaimPolicy:        &reclaim,
		AllowVolumeExpansion: physical.AllowVolumeExpansion,
		MountOptions:         physical.MountOptions,
	}
}

// syncClaim provisions the virtual claim (see provisionClaim) and, once it
// is bound, resizes it (see syncResize).
func (c *Controller) syncClaim(ctx context.Context, namespace, name string) (controller.Result, error) {
	claim, err := orNil(c.virtualClaims.PersistentVolumeClaims(namespace).Get(name))
	if err != nil || claim == nil || claim.DeletionTimestamp != nil || !c.provisionsFor(claim) {
		return controller.Result{}, err
	}
	if claim.Spec.VolumeName != "" {
		return c.syncResize(ctx, claim)
	}
	return controller.Result{}, c.provisionClaim(ctx, claim)
}

// provisionClaim provisions the unbound virtual claim: a holder claim in
// the physical cluster on the selected node, then, once it is bound, the
// virtual PV.
func (c *Controller) provisionClaim(ctx context.Context, claim *corev1.PersistentVolumeClaim) error {
	selected := claim.Annotations[annotationSelectedNode]
	if selected == "" {
		return nil // waits for its first consumer
	}
	node, err := orNil(c.virtualNodes.Get(selected))
	if err != nil || node == nil || node.Labels[kubeoceanv1alpha1.LabelClusterID] != c.clusterID {
		return err
	}
	physicalNode := kubeoceanv1alpha1.PhysicalNodeNameOf(node)
	class, err := orNil(c.virtualClasses.Get(ptr.Deref(claim.Spec.StorageClassName, "")))
	if err != nil || class == nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("claim", klog.KObj(claim), "physicalNode", physicalNode)
	holder, err := orNil(c.holders.PersistentVolumeClaims(c.mountNamespace).Get(HolderName(claim.UID)))
	if err != nil {
		return err
	}
	if holder == nil {
		holder = c.holderOf(claim, class.Parameters[kubeoceanv1alpha1.ParameterPhysicalStorageClass], physicalNode)
		_, err := c.physical.CoreV1().PersistentVolumeClaims(c.mountNamespace).Create(ctx, holder, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating holder claim %s/%s: %w", c.mountNamespace, holder.Name, err)
		}
		logger.Info("Provisioning in the physical cluster", "holder", klog.KObj(holder))
		c.recorder.Eventf(claim, corev1.EventTypeNormal, kubeoceanv1alpha1.EventProvisioning, "Claim %s/%s made in the physical cluster on node %s", c.mountNamespace, holder.Name, physicalNode)
		return nil
	}
	if holder.Spec.VolumeName == "" || holder.Status.Phase != corev1.ClaimBound {
		return nil // its binding brings us back
	}
	if existing, err := orNil(c.virtualVolumes.Get(VolumeName(claim.UID))); err != nil || existing != nil {
		return err
	}
	physicalPV, err := c.physical.CoreV1().PersistentVolumes().Get(ctx, holder.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the physical volume %s of holder %s: %w", holder.Spec.VolumeName, holder.Name, err)
	}
	pv := c.mirror(claim, class, holder, physicalPV, physicalNode)
	if _, err := c.virtual.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating virtual volume %s: %w", pv.Name, err)
	}
	logger.Info("Provisioned", "volume", pv.Name, "physicalVolume", physicalPV.Name)
	c.recorder.Eventf(claim, corev1.EventTypeNormal, kubeoceanv1alpha1.EventProvisioningSucceeded, "Volume %s provisioned as %s in the physical cluster", pv.Name, physicalPV.Name)
	return nil
}

// holderOf is the physical claim that provisions and keeps claim's volume.
func (c *Controller) holderOf(claim *corev1.PersistentVolumeClaim, physicalClass, physicalNode string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.mountNamespace, Name: HolderName(claim.UID),
			Labels: c.owner.Stamp(map[string]string{kubeoceanv1alpha1.LabelVolumeHolder: "true"}),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualClaimNamespace: claim.Namespace, kubeoceanv1alpha1.AnnotationVirtualClaimName: claim.Name, kubeoceanv1alpha1.AnnotationVirtualClaimUID: string(claim.UID),
				annotationSelectedNode: physicalNode,
			},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      claim.Spec.AccessModes,
			Resources:        *claim.Spec.Resources.DeepCopy(),
			VolumeMode:       claim.Spec.VolumeMode,
			StorageClassName: &physicalClass,
		},
	}
}

// mirror is the virtual PV of the physical volume, pre-bound to claim,
// tied to the binding's virtual nodes; a volume tied to nodes in the
// physical cluster is tied to the virtual node of the physical node it was
// made on.
func (c *Controller) mirror(claim *corev1.PersistentVolumeClaim, class *storagev1.StorageClass, holder *corev1.PersistentVolumeClaim, physical *corev1.PersistentVolume, physicalNode string) *corev1.PersistentVolume {
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name: VolumeName(claim.UID), Labels: c.ownedLabels(),
			Annotations: map[string]string{
				annotationProvisionedBy:                 ProvisionerName(c.clusterID),
				kubeoceanv1alpha1.AnnotationHolderClaim: holder.Name, kubeoceanv1alpha1.AnnotationPhysicalVolume: physical.Name,
			},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      physical.Spec.Capacity.DeepCopy(),
			PersistentVolumeSource:        *physical.Spec.PersistentVolumeSource.DeepCopy(),
			AccessModes:                   physical.Spec.AccessModes,
			MountOptions:                  physical.Spec.MountOptions,
			VolumeMode:                    physical.Spec.VolumeMode,
			StorageClassName:              class.Name,
			PersistentVolumeReclaimPolicy: reclaim,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
		},
	}
	// Any volume lives in the binding's physical cluster: only its virtual
	// nodes reach it.
	required := []corev1.NodeSelectorRequirement{
		{Key: kubeoceanv1alpha1.LabelClusterID, Operator: corev1.NodeSelectorOpIn, Values: []string{c.clusterID}},
	}
	if physical.Spec.NodeAffinity != nil && physicalNode != "" {
		required = append(required, corev1.NodeSelectorRequirement{
			Key: kubeoceanv1alpha1.LabelPhysicalNodeName, Operator: corev1.NodeSelectorOpIn, Values: []string{physicalNode},
		})
	}
	pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: required,
	}}}}
	return pv
}

// syncVolume reclaims a provisioned virtual PV whose claim is gone, by its
// policy: Delete deletes the holder, then the PV; Retain keeps both.
func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := orNil(c.virtualVolumes.Get(name))
	if err != nil || pv == nil || !c.provisioned(pv) || pv.DeletionTimestamp != nil {
		return err
	}
	if pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("volume", pv.Name)
	holder, err := orNil(c.holders.PersistentVolumeClaims(c.mountNamespace).Get(pv.Annotations[kubeoceanv1alpha1.AnnotationHolderClaim]))
	if err != nil {
		return err
	}
	if holder != nil {
		if holder.DeletionTimestamp == nil {
			err := c.physical.CoreV1().PersistentVolumeClaims(c.mountNamespace).Delete(ctx, holder.Name,
				metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &holder.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			logger.Info("Deleted the holder claim of a released volume", "holder", klog.KObj(holder))
		}
		return nil // its deletion brings us back
	}
	err = c.virtual.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pv.UID}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	logger.Info("Deleted the released volume")
	return nil
}
