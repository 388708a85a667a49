package secret

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
)

// uses tells who needs a copy of the Secret: pods of the binding (the copy
// in the mount namespace) and PVs copied for the binding (the CSI copy).
func (u *users) uses(key cache.ObjectName) (byPods, byPVs bool, err error) {
	if byPods, err = u.pods.InUse(references.KindSecret, key.Namespace, key.Name); err != nil {
		return false, false, err
	}
	pvs, err := u.pvs.ByIndex(dependents.CSISecretIndexName, key.String())
	return byPods, len(pvs) > 0, err
}

func (u *users) inUse(key cache.ObjectName) (bool, error) {
	byPods, byPVs, err := u.uses(key)
	return byPods || byPVs, err
}

// ensure makes the copies the Secret's users need. A copy one kind of user
// no longer needs stays until the Secret is released as a whole.
func (u *users) ensure(ctx context.Context, key cache.ObjectName) error {
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
