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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// mapping is the physical pod of a virtual pod as its annotations record
// it.
type mapping struct {
	// namespace and name are where the physical pod is: the mount
	// namespace and the mapped name, or the place the annotations name
	// when it is another (a pod mapped before the binding's mount
	// namespace changed, or by someone else). Such a pod is never synced,
	// but its deletion is carried to that place.
	namespace, name string
	// recorded: the virtual pod's annotations name the physical pod. The
	// bottom-up side writes them, with the physical pod's UID, when it
	// first copies the physical pod's status; before that the physical
	// pod, if any, is where the name rule puts it, and proven this
	// virtual pod's by the virtual UID it records.
	recorded bool
	// uid is the physical pod's UID, recorded by the bottom-up side once
	// it saw the pod; set only with recorded. A recorded UID whose pod is
	// gone makes the virtual pod lost.
	uid types.UID
}

// mappingOf reads the mapping annotations. A mapping to another place than
// this binding would choose is an error for everything but deletion: the
// pod was mapped by someone else, or the binding's mount namespace changed
// under it (before the schema made it immutable). The mapping returned then
// names that place, so that deleting the pod still reaches its physical
// pod; the UID recorded on the physical pod decides whether it is ours.
func (c *Controller) mappingOf(virtual *corev1.Pod) (mapping, error) {
	m := mapping{namespace: c.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(virtual.Namespace, virtual.Name)}
	namespace := virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace]
	name := virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
	if namespace == "" && name == "" {
		return m, nil
	}
	m.recorded = true
	m.uid = types.UID(virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID])
	if namespace == c.mountNamespace && name == m.name {
		return m, nil
	}
	expected := m.name
	if namespace != "" && name != "" {
		m.namespace, m.name = namespace, name
	} else {
		// Half a mapping names no place to delete from; were a physical
		// pod made under our name, the bottom-up side deletes it once
		// this virtual pod is gone.
		m.recorded, m.uid = false, ""
	}
	return m, fmt.Errorf("virtual pod %s/%s is mapped to physical pod %q/%q, but this binding maps it to %s/%s",
		virtual.Namespace, virtual.Name, namespace, name, c.mountNamespace, expected)
}

func (c *Controller) reconcile(ctx context.Context, key cache.ObjectName) (controller.Result, error) {
	virtual, err := c.virtualPods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		c.waiters.set(key, nil)
		c.preflight.Memory.Forget(key)
		return controller.Result{}, c.cleanUpAfter(ctx, key)
	}
	if err != nil {
		return controller.Result{}, err
	}
	physicalNode, ours := c.physicalNodeOf(virtual)
	if !ours {
		return controller.Result{}, nil
	}
	logger := klog.FromContext(ctx).WithValues("clusterID", c.clusterID, "virtualPod", klog.KObj(virtual))
	ctx = klog.NewContext(ctx, logger)

	m, mismatch := c.mappingOf(virtual)
	// Deletion comes first: a pod whose mapping names another place must
	// still be able to go, and its physical pod and token Secret with it.
	if virtual.DeletionTimestamp != nil {
		c.created.DeleteExpectations(key)
		return controller.Result{}, c.syncDeletion(ctx, virtual, m)
	}
	if mismatch != nil {
		c.recorder.Event(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPhysicalPodMappingMismatch, mismatch.Error())
		return controller.Result{}, controller.Terminal(mismatch)
	}
	if isTerminal(virtual) {
		return c.syncFinished(ctx, virtual, m)
	}

	physical, err := c.physicalPods.Pods(c.mountNamespace).Get(m.name)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return controller.Result{}, err
	case err == nil && physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] == string(virtual.UID):
		c.created.CreationObserved(key)
		return c.syncExisting(ctx, virtual, physical, m)
	case err == nil:
		// Left by an earlier virtual pod of the same name: it records
		// another UID, so the bottom-up side deletes it, and its deletion
		// brings us back.
		logger.V(2).Info("Physical pod of an earlier virtual pod with this name still exists; waiting for it to go",
			"physicalPod", klog.KObj(physical))
		return controller.Result{}, nil
	case m.uid != "":
		return controller.Result{}, c.syncLost(ctx, virtual, m)
	}
	if uid, wait, ok := c.created.GetExpectations(key); ok && uid == virtual.UID {
		logger.V(4).Info("Created physical pod is not in the cache yet; waiting for its event")
		return controller.RequeueAfter(wait), nil
	} else if ok {
		// Created for an earlier virtual pod of the same name.
		c.created.DeleteExpectations(key)
	}
	if c.preflight.Memory.Holds(key, virtual) {
		// Sent again as it is, it would be refused again: wait for a
		// change of the pod, or of the mount namespace or its quotas.
		logger.V(4).Info("Physical pod was refused and nothing changed since; not trying again")
		return controller.Result{}, nil
	}
	return c.create(ctx, virtual, m, physicalNode)
}

func isTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// syncExisting keeps a running physical pod in step with its virtual pod:
// metadata, deadline and images by a three-way merge, tokens renewed, and
// the dependencies condition of a pod that had to wait cleared.
func (c *Controller) syncExisting(ctx context.Context, virtual, physical *corev1.Pod, m mapping) (controller.Result, error) {
	logger := klog.FromContext(ctx).WithValues("physicalPod", klog.KObj(physical))
	if physical.DeletionTimestamp != nil {
		// Evicted or deleted on the physical side; once it is gone the
		// virtual pod is failed.
		logger.V(4).Info("Physical pod is terminating")
		return controller.Result{}, nil
	}
	if patch := podspec.UpdatePatch(physical, c.desiredState(virtual)); patch != nil {
		_, err := c.physicalClient.Pods(physical.Namespace).Patch(ctx, physical.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			logger.V(4).Info("Physical pod changed while updating it; waiting for its event", "err", err)
			return controller.Result{}, nil
		case apierrors.IsInvalid(err):
			c.recorder.Eventf(virtual, corev1.EventTypeWarning, kubeoceanv1alpha1.ReasonPhysicalPodRejected, "Updating physical pod %s/%s: %v", physical.Namespace, physical.Name, err)
			return controller.Result{}, controller.Terminal(err)
		case err != nil:
			return controller.Result{}, fmt.Errorf("updating physical pod %s/%s: %w", physical.Namespace, physical.Name, err)
		}
		logger.V(2).Info("Updated physical pod from the virtual pod")
	}
	var recheck time.Duration
	if physical.Status.Phase == corev1.PodRunning {
		// kubectl debug: only a running pod takes ephemeral containers.
		var err error
		if recheck, err = c.syncEphemeralContainers(ctx, virtual, physical, m); err != nil {
			return controller.Result{}, err
		}
	}
	if _, err := c.setDependenciesReady(ctx, virtual, corev1.ConditionTrue, kubeoceanv1alpha1.ReasonDependenciesReady, ""); err != nil {
		return controller.Result{}, err
	}
	if _, err := c.setPhysicalPodCreated(ctx, virtual, corev1.ConditionTrue, kubeoceanv1alpha1.ReasonPhysicalPodCreated, ""); err != nil {
		return controller.Result{}, err
	}
	if physical.Status.Phase == corev1.PodSucceeded || physical.Status.Phase == corev1.PodFailed {
		return controller.Result{}, nil
	}
	refresh, err := c.identity.Ensure(ctx, virtual, m.name, podidentity.PlanFor(virtual))
	if recheck > 0 && (refresh == 0 || recheck < refresh) {
		refresh = recheck
	}
	return controller.Result{RequeueAfter: refresh}, err
}

// cleanUpAfter removes the token Secret of a virtual pod that is gone, once
// its physical pod is gone too; the bottom-up side deletes that one, and
// its deletion event brings us back.
func (c *Controller) cleanUpAfter(ctx context.Context, key cache.ObjectName) error {
	c.created.DeleteExpectations(key)
	c.blocked.Note(ctx, key, "")
	return c.cleanUpFinished(ctx, mapping{namespace: c.mountNamespace, name: kubeoceanv1alpha1.PhysicalName(key.Namespace, key.Name)}, key, "")
}

// cleanUpFinished removes the token Secret of a physical pod that is gone;
// virtualUID, when known, lets it adopt a token Secret of an older version.
func (c *Controller) cleanUpFinished(ctx context.Context, m mapping, virtual cache.ObjectName, virtualUID types.UID) error {
	if _, err := c.physicalPods.Pods(m.namespace).Get(m.name); !apierrors.IsNotFound(err) {
		return err
	}
	return c.identity.Delete(ctx, m.namespace, m.name, virtual, virtualUID)
}
