package syncer

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/informers"
	"github.com/kubeocean/kubeocean/pkg/resources"
)

// The scopes of the syncer's informers. Everything cached from the physical
// cluster is either Kubeocean's own (managed pods in the mount namespace,
// policies) or slimmed to what the controllers read (nodes, foreign pods),
// so memory follows what Kubeocean manages rather than the cluster's size.

func bindingScope(bindingName string) informers.Scope {
	return informers.Scope{FieldSelector: "metadata.name=" + bindingName}
}

// ownedScope selects the virtual objects this binding's syncer owns:
// virtual nodes, their Leases and CSINodes.
func ownedScope(clusterID, namespace string) informers.Scope {
	return informers.Scope{
		Namespace:     namespace,
		LabelSelector: fmt.Sprintf("%s=%s,%s=%s", kubeoceanv1alpha1.LabelManagedBy, kubeoceanv1alpha1.ManagedByKubeocean, kubeoceanv1alpha1.LabelClusterID, clusterID),
	}
}

func managedPodScope(mountNamespace string) informers.Scope {
	return informers.Scope{
		Namespace:     mountNamespace,
		LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean,
	}
}

// foreignPodScope: pods Kubeocean does not run that hold resources on a node,
// stored compactly as *resources.PodUsage (so only the informer, never its
// typed lister, may be used). Finished pods leave the watch (a delete
// event), which is when they free their node's resources.
func foreignPodScope() informers.Scope {
	return informers.Scope{
		LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "!=" + kubeoceanv1alpha1.ManagedByKubeocean,
		FieldSelector: "spec.nodeName!=,status.phase!=" + string(corev1.PodSucceeded) + ",status.phase!=" + string(corev1.PodFailed),
		Slim:          resources.CompactForeignPod,
		SlimName:      "capacity",
	}
}

func physicalNodeScope() informers.Scope {
	return informers.Scope{Slim: slimNode, SlimName: "node"}
}

// slimNode drops the image list and volume bookkeeping, the bulk of a
// node's status, which no controller reads.
func slimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	node.Status.Images = nil
	node.Status.VolumesInUse = nil
	node.Status.VolumesAttached = nil
	return node, nil
}
