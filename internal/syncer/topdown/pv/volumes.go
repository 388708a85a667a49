package pv

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
)

// inUse tells whether the claim the PV is bound to is copied for this
// binding: marked by us and naming this PV. The claim is released (its copy
// deleted) before it is unmarked, so the PV copy goes after the claim's.
func (v *volumes) inUse(key cache.ObjectName) (bool, error) {
	pv, err := v.pvs.Get(key.Name)
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
	claim, err := v.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return dependents.IsMarked(claim, v.clusterID) && claim.Spec.VolumeName == pv.Name, nil
}

// The Syncer's PV calls take a name; the queue's keys have an empty
// namespace.

func (v *volumes) ensure(ctx context.Context, key cache.ObjectName) error {
	_, err := v.syncer.EnsurePV(ctx, key.Name)
	return err
}

func (v *volumes) release(ctx context.Context, key cache.ObjectName) error {
	return v.syncer.ReleasePV(ctx, key.Name)
}

func (v *volumes) deleteOrphan(ctx context.Context, key cache.ObjectName) error {
	return v.syncer.DeleteOrphanPV(ctx, key.Name)
}
