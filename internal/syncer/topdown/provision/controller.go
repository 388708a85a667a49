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

// Package provision gives the virtual cluster storage from the physical
// cluster. For every StorageClass of the physical cluster it keeps a
// StorageClass in the virtual cluster (named <clusterID>-<name>, volume
// binding WaitForFirstConsumer, provisioner kubeocean.io/<clusterID>), and
// it is that class's provisioner: a claim of such a class that the virtual
// scheduler gave a virtual node of this binding (the annotation
// volume.kubernetes.io/selected-node) gets a holder claim in the physical
// mount namespace, of the physical class, on the physical node behind the
// virtual node; once the physical cluster has bound the holder to a
// volume, a virtual PV mirroring that volume is made, pre-bound to the
// virtual claim, and the virtual cluster's PV controller binds them.
//
// From there the physical pods that use the claim use the holder itself
// (package dependents names it in their volumes); the holder keeps the
// volume for as long as the virtual PV lives. A virtual PV whose claim is
// gone follows its reclaim policy: Delete deletes the holder (and the
// physical cluster reclaims the volume by its own class's policy) and then
// the virtual PV; Retain keeps both.
//
// The controller is also the external resizer of its volumes (resize.go):
// a larger request of the virtual claim goes to the holder, and the
// physical volume's growth comes back to the virtual PV and the claim's
// status.
package provision

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1informers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// Name names the controller, its queue and its metrics.
const Name = "topdown-provision"

// Well-known annotations of dynamic provisioning.
const (
	annotationSelectedNode       = "volume.kubernetes.io/selected-node"
	annotationStorageProvisioner = "volume.kubernetes.io/storage-provisioner"
	annotationProvisionedBy      = "pv.kubernetes.io/provisioned-by"
)

// ProvisionerName is the provisioner of the binding's virtual classes.
func ProvisionerName(clusterID string) string { return kubeoceanv1alpha1.GroupName + "/" + clusterID }

// VirtualClassName is the virtual StorageClass of a physical one.
func VirtualClassName(clusterID, physical string) string { return clusterID + "-" + physical }

// HolderName is the physical holder claim of the virtual claim uid.
func HolderName(uid types.UID) string { return "pvc-" + string(uid) }

// VolumeName is the virtual PV provisioned for the virtual claim uid.
func VolumeName(uid types.UID) string { return "pvc-" + string(uid) }

// key is what the controller reconciles: a physical class, a virtual claim
// or a virtual volume.
type key struct {
	kind            string
	namespace, name string
}

const (
	kindClass  = "StorageClass"
	kindClaim  = "PersistentVolumeClaim"
	kindVolume = "PersistentVolume"
)

// Options are the dependencies of the controller; all but Metrics and
// Clock are required.
type Options struct {
	ClusterID      string
	BindingUID     types.UID
	MountNamespace string

	VirtualClient, PhysicalClient kubernetes.Interface

	// PhysicalClasses: every StorageClass of the physical cluster.
	PhysicalClasses storageinformers.StorageClassInformer
	// VirtualClasses and VirtualVolumes: the binding's (labels managed-by
	// and cluster-id).
	VirtualClasses storageinformers.StorageClassInformer
	VirtualVolumes corev1informers.PersistentVolumeInformer
	// VirtualClaims: every claim of the virtual cluster.
	VirtualClaims corev1informers.PersistentVolumeClaimInformer
	// VirtualNodes: the binding's virtual nodes.
	VirtualNodes corev1informers.NodeInformer
	// Holders: the binding's claims in the mount namespace (its identity).
	Holders corev1informers.PersistentVolumeClaimInformer

	Recorder record.EventRecorder
	Metrics  *controller.Metrics
	// Clock times the retry of refused resizes; default the real clock.
	Clock clock.PassiveClock
}

// Controller provisions, keyed by key.
type Controller struct {
	*controller.Controller[key]

	clusterID, mountNamespace string
	owner                     ownership.Owner
	virtual, physical         kubernetes.Interface
	physicalClasses           storagelisters.StorageClassLister
	virtualClasses            storagelisters.StorageClassLister
	virtualVolumes            corev1listers.PersistentVolumeLister
	virtualClaims             corev1listers.PersistentVolumeClaimLister
	virtualNodes              corev1listers.NodeLister
	holders                   corev1listers.PersistentVolumeClaimLister
	recorder                  record.EventRecorder
	clock                     clock.PassiveClock
	refused                   *refusals
}

// New builds the controller and registers its handlers; it starts nothing.
func New(opts Options) (*Controller, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Controller{
		clusterID: opts.ClusterID, mountNamespace: opts.MountNamespace,
		owner:   ownership.Owner{ClusterID: opts.ClusterID, BindingUID: opts.BindingUID},
		virtual: opts.VirtualClient, physical: opts.PhysicalClient,
		physicalClasses: opts.PhysicalClasses.Lister(), virtualClasses: opts.VirtualClasses.Lister(),
		virtualVolumes: opts.VirtualVolumes.Lister(), virtualClaims: opts.VirtualClaims.Lister(),
		virtualNodes: opts.VirtualNodes.Lister(), holders: opts.Holders.Lister(),
		recorder: opts.Recorder, clock: opts.Clock,
		refused: &refusals{byUID: map[types.UID]refusal{}},
	}
	if c.clock == nil {
		c.clock = clock.RealClock{}
	}
	c.Controller = controller.New(controller.Options[key]{
		Name: Name, Reconcile: c.reconcile, Metrics: opts.Metrics,
		HasSynced: []cache.InformerSynced{
			opts.PhysicalClasses.Informer().HasSynced, opts.VirtualClasses.Informer().HasSynced,
			opts.VirtualVolumes.Informer().HasSynced, opts.VirtualClaims.Informer().HasSynced,
			opts.VirtualNodes.Informer().HasSynced, opts.Holders.Informer().HasSynced,
		},
	})
	classOf := func(class *storagev1.StorageClass) []key {
		return []key{{kind: kindClass, name: class.Name}}
	}
	handlers := []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{opts.PhysicalClasses.Informer(), controller.Handler[*storagev1.StorageClass, key]{Enqueue: c.Enqueue, Keys: classOf}},
		{opts.VirtualClasses.Informer(), controller.Handler[*storagev1.StorageClass, key]{Enqueue: c.Enqueue,
			Keys: func(class *storagev1.StorageClass) []key {
				if p := class.Parameters[kubeoceanv1alpha1.ParameterPhysicalStorageClass]; p != "" {
					return []key{{kind: kindClass, name: p}}
				}
				return nil
			}}},
		{opts.VirtualClaims.Informer(), controller.Handler[*corev1.PersistentVolumeClaim, key]{Enqueue: c.Enqueue,
			Keys: func(claim *corev1.PersistentVolumeClaim) []key {
				return []key{{kind: kindClaim, namespace: claim.Namespace, name: claim.Name}}
			},
			Filter: c.provisionsFor}},
		{opts.Holders.Informer(), controller.Handler[*corev1.PersistentVolumeClaim, key]{Enqueue: c.Enqueue,
			Keys: func(holder *corev1.PersistentVolumeClaim) []key {
				return []key{
					{kind: kindClaim, namespace: holder.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimNamespace], name: holder.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimName]},
					{kind: kindVolume, name: VolumeName(types.UID(holder.Annotations[kubeoceanv1alpha1.AnnotationVirtualClaimUID]))},
				}
			},
			Filter: func(holder *corev1.PersistentVolumeClaim) bool {
				return holder.Labels[kubeoceanv1alpha1.LabelVolumeHolder] == "true"
			}}},
		{opts.VirtualVolumes.Informer(), controller.Handler[*corev1.PersistentVolume, key]{Enqueue: c.Enqueue,
			Keys: func(pv *corev1.PersistentVolume) []key {
				return []key{{kind: kindVolume, name: pv.Name}}
			},
			Filter: c.provisioned}},
	}
	for _, h := range handlers {
		if err := c.Watch(h.informer, h.handler); err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
	}
	return c, nil
}

func (o Options) validate() error {
	var errs []error
	if o.ClusterID == "" || o.BindingUID == "" || o.MountNamespace == "" {
		errs = append(errs, errors.New("ClusterID, BindingUID and MountNamespace are required"))
	}
	if o.VirtualClient == nil || o.PhysicalClient == nil || o.Recorder == nil {
		errs = append(errs, errors.New("VirtualClient, PhysicalClient and Recorder are required"))
	}
	if o.PhysicalClasses == nil || o.VirtualClasses == nil || o.VirtualVolumes == nil || o.VirtualClaims == nil ||
		o.VirtualNodes == nil || o.Holders == nil {
		errs = append(errs, errors.New("every informer is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s options: %w", Name, err)
	}
	return nil
}

// provisionsFor tells a virtual claim this binding's provisioner serves:
// its class is one of ours.
func (c *Controller) provisionsFor(claim *corev1.PersistentVolumeClaim) bool {
	if claim.Annotations[annotationStorageProvisioner] == ProvisionerName(c.clusterID) {
		return true
	}
	if claim.Spec.StorageClassName == nil {
		return false
	}
	class, err := c.virtualClasses.Get(*claim.Spec.StorageClassName)
	return err == nil && class.Provisioner == ProvisionerName(c.clusterID)
}

// provisioned tells a virtual PV this binding provisioned.
func (c *Controller) provisioned(pv *corev1.PersistentVolume) bool {
	return pv.Annotations[annotationProvisionedBy] == ProvisionerName(c.clusterID) && pv.Annotations[kubeoceanv1alpha1.AnnotationHolderClaim] != ""
}

// ownedLabels are the labels of what the controller makes in the virtual
// cluster: the binding's, as on its virtual nodes.
func (c *Controller) ownedLabels() map[string]string {
	return map[string]string{
		kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean,
		kubeoceanv1alpha1.LabelClusterID: c.clusterID,
	}
}
