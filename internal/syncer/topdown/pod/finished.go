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

package pod

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// finalStatusRecheck is how soon a finished physical pod whose final
// status the virtual pod does not show yet is looked at again. The
// bottom-up side copies it on the physical pod's own event; a status-only
// change of the virtual pod does not wake this controller, so it looks.
const finalStatusRecheck = 5 * time.Second

// syncFinished ends the physical side of a virtual pod that has finished
// (Succeeded or Failed), as a kubelet's pod ends on a node: nothing is
// created again, the physical pod is deleted once the virtual pod shows
// its final status (phase and every container's state, exit codes
// included), and its token Secret follows. The virtual pod stays as it is,
// for its owner (a Job counts it) and for the user to read. Deleting the
// physical pod lets the copies it used go too: a finished pod keeps them
// only while its physical twin exists.
func (c *Controller) syncFinished(ctx context.Context, virtual *corev1.Pod, m mapping) (controller.Result, error) {
	logger := klog.FromContext(ctx)
	physical, err := c.physicalPods.Pods(m.namespace).Get(m.name)
	switch {
	case apierrors.IsNotFound(err):
		return controller.Result{}, c.identity.Delete(ctx, m.namespace, m.name, cache.MetaObjectToName(virtual), virtual.UID)
	case err != nil:
		return controller.Result{}, err
	case physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(virtual.UID):
		// An earlier virtual pod's: the bottom-up side deletes it.
		return controller.Result{}, nil
	case physical.DeletionTimestamp != nil:
		return controller.Result{}, nil // its deletion event brings us back
	}
	if isTerminal(physical) && !finalStatusCopied(virtual, physical) {
		logger.V(4).Info("Physical pod finished; waiting for its final status on the virtual pod", "physicalPod", klog.KObj(physical))
		return controller.RequeueAfter(finalStatusRecheck), nil
	}
	// A physical pod that still runs under a finished virtual pod (marked
	// failed by us or by hand) must not: the virtual pod can never run
	// again, since a pod's phase does not leave Succeeded or Failed.
	err = c.physicalClient.Pods(physical.Namespace).Delete(ctx, physical.Name, metav1.DeleteOptions{
		// Its containers have stopped: nothing to wait for.
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &physical.UID},
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		return controller.Result{}, nil // gone or replaced; events bring us back
	case err != nil:
		return controller.Result{}, fmt.Errorf("deleting finished physical pod %s/%s: %w", physical.Namespace, physical.Name, err)
	}
	logger.V(2).Info("Deleted finished physical pod", "physicalPod", klog.KObj(physical), "phase", virtual.Status.Phase)
	return controller.Result{}, nil
}

// finalStatusCopied tells whether the virtual pod shows the physical pod's
// final phase and container states, as the bottom-up side copies them.
func finalStatusCopied(virtual, physical *corev1.Pod) bool {
	v, p := virtual.Status, physical.Status
	return v.Phase == p.Phase &&
		equality.Semantic.DeepEqual(v.InitContainerStatuses, p.InitContainerStatuses) &&
		equality.Semantic.DeepEqual(v.ContainerStatuses, p.ContainerStatuses) &&
		equality.Semantic.DeepEqual(v.EphemeralContainerStatuses, p.EphemeralContainerStatuses)
}
