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

package copier

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1informers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// podUsers are the binding's pods referring to objects of one kind
// (ConfigMaps, PVCs, and the Secrets pods use).
type podUsers struct {
	kind         string // references.Kind*
	pods         *dependents.PodReferences
	virtualPods  cache.SharedIndexInformer
	physicalPods corev1informers.PodInformer // optional
}

// podUsers reads the pods of the binding. Each kind has its own
// PodReferences, which remembers the pod that answered last per object.
func (b *builder) podUsers(kind string) *podUsers {
	o := b.opts
	pods, err := dependents.NewPodReferences(ownership.Owner{ClusterID: o.ClusterID, BindingUID: o.BindingUID}, o.MountNamespace, o.VirtualPods, o.VirtualNodes, o.PhysicalPods)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("copier: %s: %w", kind, err)
	}
	return &podUsers{kind: kind, pods: pods, virtualPods: o.VirtualPods.Informer(), physicalPods: o.PhysicalPods}
}

func (u *podUsers) inUse(key cache.ObjectName) (bool, error) {
	return u.pods.InUse(u.kind, key.Namespace, key.Name)
}

func (u *podUsers) hasSynced() []cache.InformerSynced { return u.pods.HasSynced() }

// watch requeues the objects a pod refers to when it changes, and when the
// physical twin of a finished pod goes.
func (u *podUsers) watch(c *controller.Controller[cache.ObjectName]) error {
	if err := c.Watch(u.virtualPods, dependents.PodHandler(u.kind, c.Enqueue)); err != nil {
		return fmt.Errorf("registering virtual pod handler: %w", err)
	}
	if u.physicalPods != nil {
		if err := c.Watch(u.physicalPods.Informer(), u.pods.PhysicalPodGoneHandler(u.kind, c.Enqueue)); err != nil {
			return fmt.Errorf("registering physical pod handler: %w", err)
		}
	}
	return nil
}

// secretUsers are the pods of the binding (the copy in the mount
// namespace) and the PVs copied for it (the CSI copy).
type secretUsers struct {
	*podUsers
	syncer *dependents.Syncer
	pvs    cache.SharedIndexInformer
}

// secretUsers adds the CSI Secret index to the virtual PVs unless they
// have it.
func (b *builder) secretUsers(kind string) *secretUsers {
	pvs := b.opts.VirtualPVs.Informer()
	if err := dependents.AddIndex(pvs, dependents.CSISecretIndexName, dependents.CSISecretIndexKeys); err != nil && b.err == nil {
		b.err = fmt.Errorf("copier: %s: %w", kind, err)
	}
	return &secretUsers{podUsers: b.podUsers(kind), syncer: b.opts.Syncer, pvs: pvs}
}

func (u *secretUsers) uses(key cache.ObjectName) (byPods, byPVs bool, err error) {
	if byPods, err = u.podUsers.inUse(key); err != nil {
		return false, false, err
	}
	pvs, err := u.pvs.GetIndexer().ByIndex(dependents.CSISecretIndexName, key.String())
	return byPods, len(pvs) > 0, err
}

func (u *secretUsers) inUse(key cache.ObjectName) (bool, error) {
	byPods, byPVs, err := u.uses(key)
	return byPods || byPVs, err
}

func (u *secretUsers) hasSynced() []cache.InformerSynced {
	return append(u.podUsers.hasSynced(), u.pvs.HasSynced)
}

// ensure makes the copies the Secret's users need. A copy one kind of user
// no longer needs stays until the Secret is released as a whole.
func (u *secretUsers) ensure(ctx context.Context, key cache.ObjectName) error {
	byPods, byPVs, err := u.uses(key)
	if err != nil {
		return err
	}
	if byPods {
		if _, err := u.syncer.EnsureSecret(ctx, key.Namespace, key.Name); err != nil {
			return err
		}
	}
	if byPVs {
		return u.syncer.EnsureCSISecret(ctx, key.Namespace, key.Name)
	}
	return nil
}

// watch adds to the pods' handlers the PVs': a PV marked or released
// changes whether its CSI Secret is used.
func (u *secretUsers) watch(c *controller.Controller[cache.ObjectName]) error {
	if err := u.podUsers.watch(c); err != nil {
		return err
	}
	if err := c.Watch(u.pvs, controller.Handler[*corev1.PersistentVolume, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    csiSecretKeys,
	}); err != nil {
		return fmt.Errorf("registering virtual PV handler: %w", err)
	}
	return nil
}

func csiSecretKeys(pv *corev1.PersistentVolume) []cache.ObjectName {
	if key, ok := dependents.CSISecretOf(pv); ok {
		return []cache.ObjectName{key}
	}
	return nil
}

// claimUsers are the claims a PV is bound to: a PV is used while its claim
// is copied for this binding.
type claimUsers struct {
	clusterID string
	pvs       corev1listers.PersistentVolumeLister
	claims    corev1informers.PersistentVolumeClaimInformer
}

func (b *builder) claimUsers() *claimUsers {
	return &claimUsers{clusterID: b.opts.ClusterID, pvs: b.opts.VirtualPVs.Lister(), claims: b.opts.VirtualPVCs}
}

// inUse tells whether the claim the PV is bound to is copied for this
// binding: marked by us and naming this PV. The claim is released (its copy
// deleted) before it is unmarked, so the PV copy goes after the claim's.
func (u *claimUsers) inUse(key cache.ObjectName) (bool, error) {
	pv, err := u.pvs.Get(key.Name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return false, nil
	}
	claim, err := u.claims.Lister().PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return dependents.IsMarked(claim, u.clusterID) && claim.Spec.VolumeName == pv.Name, nil
}

func (u *claimUsers) hasSynced() []cache.InformerSynced {
	return []cache.InformerSynced{u.claims.Informer().HasSynced}
}

// watch requeues a claim's volume when the claim is marked or released.
func (u *claimUsers) watch(c *controller.Controller[cache.ObjectName]) error {
	if err := c.Watch(u.claims.Informer(), controller.Handler[*corev1.PersistentVolumeClaim, cache.ObjectName]{
		Enqueue: c.Enqueue,
		Keys:    volumeKeys,
	}); err != nil {
		return fmt.Errorf("registering virtual PVC handler: %w", err)
	}
	return nil
}

func volumeKeys(claim *corev1.PersistentVolumeClaim) []cache.ObjectName {
	if claim.Spec.VolumeName == "" {
		return nil
	}
	return []cache.ObjectName{{Name: claim.Spec.VolumeName}}
}
