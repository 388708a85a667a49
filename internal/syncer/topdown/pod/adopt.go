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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// adoptable tells whether live, a physical pod outside the binding's
// cache at virtual's physical name, is virtual's twin that this binding
// may take over: it records virtual's UID (unique, and not the tenant's to
// choose) and was made by an older version without identity or by a
// proven predecessor of this binding (ownership.Predecessors), which the
// UID itself proves when no binding has the pod's binding UID any more.
// why says, when it is not, what the pod is, for the event that reports it.
func (c *Controller) adoptable(ctx context.Context, virtual, live *corev1.Pod) (ok bool, why string, err error) {
	recorded := live.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID]
	uid, sibling := c.owner.Sibling(live)
	switch {
	case recorded != string(virtual.UID):
		if sibling {
			return false, fmt.Sprintf("; it was made by binding UID %s (cluster ID %s) for virtual pod %s/%s UID %s, not for this pod (UID %s)",
				uid, c.clusterID, live.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace],
				live.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName], recorded, virtual.UID), nil
		}
		return false, "", nil
	case ownership.Legacy(live):
		return true, "", nil
	}
	proven, err := c.predecessors.ProveByTwin(ctx, live)
	if err != nil || proven || !sibling {
		return proven, "", err
	}
	return false, fmt.Sprintf("; it was made for this pod by binding UID %s (cluster ID %s), which still exists or is not known to be gone", uid, c.clusterID), nil
}

// blockerOrForeign is why for a blocking pod that names no binding.
func blockerOrForeign(why string) string {
	if why == "" {
		return " (not Kubeocean's, or another cluster ID's)"
	}
	return why
}

// adopt stamps the binding's identity on a physical pod an older version
// or a predecessor binding made for virtual, which the caller proved (see
// adoptable). The update is the usual three-way merge, whose identity
// labels are enforced; it names the pod's UID, so it fails on a pod
// recreated since. Once stamped, the pod enters the scoped informer and is
// synced as any other: one pod, never a second copy of it.
func (c *Controller) adopt(ctx context.Context, virtual, physical *corev1.Pod) error {
	if c.predecessors.Proven(physical) {
		// The predecessor's copies the pod uses are taken over now: the
		// copy controllers met them as conflicts before this pod proved
		// the predecessor, and recheck those only minutes later.
		if _, problem := c.resolveDependencies(ctx, virtual); problem != nil {
			klog.FromContext(ctx).Info("Copies of an adopted pod not all in step", "reason", problem.reason, "message", problem.message, "err", problem.err)
		}
	}
	patch := podspec.UpdatePatch(physical, c.desiredState(virtual))
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
	c.blocked.Note(ctx, controller.ObjectKey(virtual), "")
	klog.FromContext(ctx).V(2).Info("Adopted physical pod", "physicalPod", klog.KObj(physical),
		"previousBindingUID", physical.Labels[kubeoceanv1alpha1.LabelBindingUID])
	return nil
}
