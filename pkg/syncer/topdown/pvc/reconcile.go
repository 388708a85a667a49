package pvc

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	virtual, err := c.claims.PersistentVolumeClaims(key.Namespace).Get(key.Name)
	switch {
	case apierrors.IsNotFound(err):
		return c.lifecycle.Reconcile(ctx, key, nil)
	case err != nil:
		return controller.Result{}, err
	}
	return c.lifecycle.Reconcile(ctx, key, virtual)
}
