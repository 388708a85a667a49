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

package podstatus

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// virtualPodRef is the virtual pod a physical pod says it was made for.
type virtualPodRef struct {
	namespace, name string
	uid             types.UID
}

// refOf reads the mapping annotations of a physical pod; false when one is
// missing.
func refOf(physical *corev1.Pod) (virtualPodRef, bool) {
	ref := virtualPodRef{
		namespace: physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace],
		name:      physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName],
		uid:       types.UID(physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID]),
	}
	return ref, ref.namespace != "" && ref.name != "" && ref.uid != ""
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	physical, err := c.physicalPods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.lag.forget(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if !c.isManaged(physical) {
		return controller.Result{}, nil
	}
	logger := klog.FromContext(ctx).WithValues("clusterID", c.clusterID)
	ctx = klog.NewContext(ctx, logger)

	ref, ok := refOf(physical)
	if !ok {
		return controller.Result{}, c.deleteOrphan(ctx, physical, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonMissingVirtualPodMapping,
			"it has no complete virtual pod mapping annotations")
	}
	virtual, dead, err := c.virtualPodFor(ctx, key, physical, ref)
	if err != nil {
		return controller.Result{}, err
	}
	if dead != "" {
		c.lag.forget(key)
		return controller.Result{}, c.deleteOrphan(ctx, physical, corev1.EventTypeNormal, kubeoceanv1alpha1.ReasonVirtualPodGone, dead)
	}
	if virtual == nil {
		// The virtual pod cache is behind; its event brings us back.
		return controller.Result{}, nil
	}

	ctx = klog.NewContext(ctx, logger.WithValues("virtualPod", klog.KObj(virtual)))
	return c.syncVirtualPod(ctx, key, physical, virtual)
}

// virtualPodFor returns the virtual pod the physical pod was made for, or,
// when the mapping is dead, why, or neither when the cache is known to be
// behind our last status write (whose event is on its way: writing now
// would conflict). Any other mismatch, a pod just recreated under the same
// name for one, is confirmed by a live GET before a pod is deleted for it.
// Failing to reach the virtual cluster is an error, never a reason to
// delete.
func (c *Controller) virtualPodFor(ctx context.Context, key cache.ObjectName, physical *corev1.Pod, ref virtualPodRef) (*corev1.Pod, string, error) {
	logger := klog.FromContext(ctx)
	cached, err := c.virtualPods.Pods(ref.namespace).Get(ref.name)
	switch {
	case err == nil && mappingMismatch(cached, physical, ref) == "":
		if c.lag.behindWrite(key, cached.ResourceVersion) {
			logger.V(4).Info("Virtual pod cache is behind our last status write; waiting for its event", "virtualPod", klog.KObj(cached))
			return nil, "", nil
		}
		return cached, "", nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, "", err
	}

	live, err := c.virtualClient.Pods(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
	if isPodNotFound(err, ref.name) {
		return nil, fmt.Sprintf("virtual pod %s/%s does not exist", ref.namespace, ref.name), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("confirming virtual pod %s/%s: %w", ref.namespace, ref.name, err)
	}
	if why := mappingMismatch(live, physical, ref); why != "" {
		return nil, why, nil
	}
	logger.V(4).Info("Virtual pod cache is behind; using the live object", "virtualPod", klog.KObj(live))
	return live, "", nil
}

// isPodNotFound is true only for the apiserver's own answer that this pod
// does not exist. A 404 that is not an API status (a proxy in between, a
// wrong path) is an unexpected response to client-go and must not cost a
// running pod.
func isPodNotFound(err error, name string) bool {
	if !apierrors.IsNotFound(err) || apierrors.IsUnexpectedServerError(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	details := status.Status().Details
	return details != nil && details.Kind == "pods" && details.Name == name
}

// mappingMismatch says why virtual is not the pod physical was made for, or
// "" when the two belong together: the physical pod records the virtual
// pod's UID, and the virtual pod either names this physical pod or names
// none yet and this pod is where the name rule puts it (the top-down side
// creates the physical pod first; the mapping comes with our first status
// write). A virtual pod that names another physical pod does not claim
// this one.
func mappingMismatch(virtual, physical *corev1.Pod, ref virtualPodRef) string {
	if virtual.UID != ref.uid {
		return fmt.Sprintf("virtual pod %s/%s has UID %s, not %s", virtual.Namespace, virtual.Name, virtual.UID, ref.uid)
	}
	namespace, name, recorded := mappingOf(virtual)
	if !recorded {
		if physical.Name != kubeoceanv1alpha1.PhysicalName(virtual.Namespace, virtual.Name) {
			return fmt.Sprintf("virtual pod %s/%s maps by name to another physical pod than %s", virtual.Namespace, virtual.Name, physical.Name)
		}
		return ""
	}
	if namespace != physical.Namespace || name != physical.Name {
		return fmt.Sprintf("virtual pod %s/%s maps to physical pod %q/%q", virtual.Namespace, virtual.Name, namespace, name)
	}
	return ""
}

// mappingOf reads the physical pod a virtual pod's annotations name;
// recorded is false when they name none (neither annotation is set).
func mappingOf(virtual *corev1.Pod) (namespace, name string, recorded bool) {
	namespace = virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace]
	name = virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
	return namespace, name, namespace != "" || name != ""
}

// deleteOrphan deletes a physical pod no virtual pod owns. The UID
// precondition keeps a pod recreated under the same name safe.
func (c *Controller) deleteOrphan(ctx context.Context, physical *corev1.Pod, eventType, reason, why string) error {
	logger := klog.FromContext(ctx)
	if physical.DeletionTimestamp != nil {
		logger.V(4).Info("Orphaned physical pod is already terminating", "reason", why)
		return nil
	}
	logger.Info("Deleting orphaned physical pod", "reason", why)
	err := c.physicalClient.Pods(physical.Namespace).Delete(ctx, physical.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &physical.UID},
	})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// Another pod took the name; its own events bring it here.
		logger.V(2).Info("Physical pod was replaced before it could be deleted")
		return nil
	case err != nil:
		return fmt.Errorf("deleting orphaned physical pod %s/%s: %w", physical.Namespace, physical.Name, err)
	}
	c.recorder.Eventf(physical, eventType, reason, "Deleted by Kubeocean: %s", why)
	return nil
}

// syncVirtualPod copies the physical pod's status to the virtual pod and
// records the mapping (the physical pod's namespace, name and UID) on it,
// when either differs, in one write: the pods/status endpoint keeps changes
// to labels and annotations (it resets only spec, deletionTimestamp and
// ownerReferences), so the first status copy also records the mapping, and
// a synced pod costs one virtual write from creation to Running. The write carries the resourceVersion (and UID)
// read, so it fails on a virtual pod changed or recreated since.
//
// last-sync-time is stamped only with the mapping: it tells when it was
// recorded; stamping it on every status change would wake every watcher of
// virtual pods once more per change, for a time the status conditions
// already carry.
//
// A mapping alone waits up to unreportedGrace while the physical pod's kubelet
// has not reported on it yet: a new pod's first report follows its
// creation closely, and both then cost one write.
func (c *Controller) syncVirtualPod(ctx context.Context, key cache.ObjectName, physical, virtual *corev1.Pod) (controller.Result, error) {
	status := mirroredStatus(virtual.Status, physical.Status)
	statusChanged := !equality.Semantic.DeepEqual(virtual.Status, status)
	namespace, name, _ := mappingOf(virtual)
	mappingChanged := virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] != string(physical.UID) ||
		namespace != physical.Namespace || name != physical.Name
	if !statusChanged && !mappingChanged {
		c.lag.reported(key)
		return controller.Result{}, nil
	}
	if !statusChanged && unreported(physical) {
		if wait := c.lag.unreported(key, c.clock.Now()); wait > 0 {
			klog.FromContext(ctx).V(4).Info("Physical pod has no status reported yet; recording its UID with the first report", "wait", wait)
			return controller.RequeueAfter(wait), nil
		}
	}
	c.lag.reported(key)
	updated := virtual.DeepCopy()
	updated.Status = status
	if mappingChanged {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		// The mapping and the physical UID go together: from this write
		// on, the physical pod being gone means it was lost.
		updated.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace] = physical.Namespace
		updated.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] = physical.Name
		updated.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] = string(physical.UID)
		updated.Annotations[kubeoceanv1alpha1.AnnotationLastSyncTime] = c.clock.Now().UTC().Format(time.RFC3339)
	}
	_, err := c.virtualClient.Pods(virtual.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		// The virtual pod changed or went away since our read; the
		// informer event of that change re-enqueues the physical pod.
		klog.FromContext(ctx).V(4).Info("Virtual pod changed while copying status; waiting for its event", "err", err)
		return controller.Result{}, nil
	case err != nil:
		return controller.Result{}, fmt.Errorf("updating status of virtual pod %s/%s: %w", virtual.Namespace, virtual.Name, err)
	}
	c.lag.wrote(key, virtual.ResourceVersion)
	klog.FromContext(ctx).V(2).Info("Copied physical pod status to virtual pod", "phase", status.Phase, "recordedMapping", mappingChanged)
	return controller.Result{}, nil
}

// unreported tells a physical pod its kubelet has not reported on yet: no
// conditions, no container statuses, not started.
func unreported(physical *corev1.Pod) bool {
	s := physical.Status
	return (s.Phase == "" || s.Phase == corev1.PodPending) && len(s.Conditions) == 0 &&
		len(s.ContainerStatuses) == 0 && len(s.InitContainerStatuses) == 0 && s.StartTime == nil
}
