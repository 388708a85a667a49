package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/ownership"
)

// adopt stamps the binding's identity on a physical pod an older version
// made for virtual, which the caller proved by the virtual pod's UID
// recorded on it (UIDs are unique, so no other binding made it). The
// update is the usual three-way merge, whose identity labels are enforced;
// it names the pod's UID, so it fails on a pod recreated since. Once
// stamped, the pod enters the scoped informer and is synced as any other.
func (c *Controller) adopt(ctx context.Context, virtual, physical *corev1.Pod) error {
	patch := updatePatch(physical, c.desiredState(virtual))
	if patch == nil {
		return nil
	}
	_, err := c.physicalClient.Pods(physical.Namespace).Patch(ctx, physical.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		klog.FromContext(ctx).V(4).Info("Physical pod changed while adopting it; waiting for its event", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("adopting physical pod %s/%s: %w", physical.Namespace, physical.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Adopted physical pod", "physicalPod", klog.KObj(physical))
	return nil
}

// tokenSecretOurs tells whether a token Secret is this binding's: it
// carries the binding's identity, or an older version made it for the
// virtual pod virtualUID (known only while the virtual pod is).
func (c *Controller) tokenSecretOurs(secret *corev1.Secret, virtualUID types.UID) bool {
	if c.owner.Owns(secret) {
		return true
	}
	return virtualUID != "" && ownership.Legacy(secret) && secret.Labels[LabelPodToken] == "true" &&
		secret.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] == string(virtualUID)
}
