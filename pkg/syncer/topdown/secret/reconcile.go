package secret

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/pkg/controller"
	"github.com/kubeocean/kubeocean/pkg/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/pkg/syncer/topdown/references"
)

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	virtual, err := c.secrets.Secrets(key.Namespace).Get(key.Name)
	switch {
	case apierrors.IsNotFound(err):
		return c.lifecycle.Reconcile(ctx, key, nil)
	case err != nil:
		return controller.Result{}, err
	}
	return c.lifecycle.Reconcile(ctx, key, virtual)
}

// uses tells who needs a copy of the Secret: pods of the binding (the copy
// in the mount namespace) and PVs copied for the binding (the CSI copy).
func (c *Controller) uses(key cache.ObjectName) (byPods, byPVs bool, err error) {
	if byPods, err = c.pods.InUse(references.KindSecret, key.Namespace, key.Name); err != nil {
		return false, false, err
	}
	pvs, err := c.pvs.ByIndex(dependents.CSISecretIndexName, key.String())
	return byPods, len(pvs) > 0, err
}

func (c *Controller) inUse(key cache.ObjectName) (bool, error) {
	byPods, byPVs, err := c.uses(key)
	return byPods || byPVs, err
}

// ensure makes the copies the Secret's users need. A copy one kind of user
// no longer needs stays until the Secret is released as a whole.
func (c *Controller) ensure(ctx context.Context, key cache.ObjectName) error {
	byPods, byPVs, err := c.uses(key)
	if err != nil {
		return err
	}
	if byPods {
		if _, err := c.syncer.EnsureSecret(ctx, key.Namespace, key.Name); err != nil {
			return err
		}
	}
	if byPVs {
		return c.syncer.EnsureCSISecret(ctx, key.Namespace, key.Name)
	}
	return nil
}
