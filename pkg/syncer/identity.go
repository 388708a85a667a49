package syncer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// identityNamespace is the namespace whose UID identifies a cluster: every
// cluster has it, and it is never recreated.
const identityNamespace = "kube-system"

// physicalClusterUID reads the identity of the cluster the physical
// clients reach, which the node controller compares with the one the
// binding is bound to (status.physicalClusterUID). A credential without
// the grant (an older RBAC) leaves the check off, with a log line; any other
// error fails the start, which the manager retries.
func physicalClusterUID(ctx context.Context, kube kubernetes.Interface) (string, error) {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, identityNamespace, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		klog.FromContext(ctx).Info("Cannot read the physical cluster's identity; the check that the kubeconfig still reaches the bound cluster is off",
			"namespace", identityNamespace, "err", err)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading the physical cluster's identity (namespace %s): %w", identityNamespace, err)
	}
	return string(ns.UID), nil
}
