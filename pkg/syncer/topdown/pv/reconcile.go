package pv

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/pkg/controller"
	"github.com/kubeocean/kubeocean/pkg/syncer/topdown/dependents"
)

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	virtual, err := c.pvs.Get(key.Name)
	switch {
	case apierrors.IsNotFound(err):
		return c.lifecycle.Reconcile(ctx, key, nil)
	case err != nil:
		return controller.Result{}, err
	}
	return c.lifecycle.Reconcile(ctx, key, virtual)
}

// inUse tells whether the claim the PV is bound to is copied for this
// binding: marked by us and naming this PV. The claim is released (its copy
// deleted) before it is unmarked, so the PV copy goes after the claim's.
func (c *Controller) inUse(key cache.ObjectName) (bool, error) {
	pv, err := c.pvs.Get(key.Name)
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
	claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return dependents.IsMarked(claim, c.clusterID) && claim.Spec.VolumeName == pv.Name, nil
}

// The Syncer's PV calls take a name; the queue's keys have an empty
// namespace.

func (c *Controller) ensure(ctx context.Context, key cache.ObjectName) error {
	_, err := c.syncer.EnsurePV(ctx, key.Name)
	return err
}

func (c *Controller) release(ctx context.Context, key cache.ObjectName) error {
	return c.syncer.ReleasePV(ctx, key.Name)
}

func (c *Controller) deleteOrphan(ctx context.Context, key cache.ObjectName) error {
	return c.syncer.DeleteOrphanPV(ctx, key.Name)
}
