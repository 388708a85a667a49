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
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// The event handlers: which events bring which virtual pods back.

func (c *Controller) registerHandlers(opts Options) error {
	informer := opts.VirtualPods.Informer()
	if _, ok := informer.GetIndexer().GetIndexers()[PodsByNodeIndex]; !ok {
		if err := informer.AddIndexers(cache.Indexers{PodsByNodeIndex: podNodeName}); err != nil {
			return fmt.Errorf("topdown pod: adding %s index: %w", PodsByNodeIndex, err)
		}
	}
	handlers := []struct {
		what     string
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{"virtual pod", informer, controller.Handler[*corev1.Pod, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: controller.ObjectKeys[*corev1.Pod],
			Filter: c.onOurNode, Changed: virtualPodChanged,
		}},
		{"virtual node", opts.VirtualNodes.Informer(), controller.Handler[*corev1.Node, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: c.podsOnNode, Filter: c.isOurNode,
			Changed: func(oldNode, newNode *corev1.Node) bool { return !maps.Equal(oldNode.Labels, newNode.Labels) },
		}},
		{"physical pod", opts.PhysicalPods.Informer(), recordDeletions{deleted: &c.deleted, clock: c.clock,
			ResourceEventHandler: controller.Handler[*corev1.Pod, cache.ObjectName]{
				Enqueue: c.Enqueue, Keys: virtualKeys[*corev1.Pod], Filter: c.isManagedPod, Changed: physicalPodChanged,
			}}},
		{"physical token secret", opts.PhysicalSecrets.Informer(), controller.Handler[metav1.Object, cache.ObjectName]{
			Enqueue: c.Enqueue, Keys: c.tokenSecretKeys, Filter: c.identity.IsTokenSecret,
		}},
	}
	for kind, informer := range opts.DependencyEvents {
		handlers = append(handlers, struct {
			what     string
			informer cache.SharedIndexInformer
			handler  cache.ResourceEventHandler
		}{"virtual " + kind, informer, c.waiters.handler(kind, c.Enqueue)})
	}
	for _, h := range handlers {
		if err := c.Watch(h.informer, h.handler); err != nil {
			return fmt.Errorf("topdown pod: registering %s handler: %w", h.what, err)
		}
	}
	return c.registerRefusalHandlers(opts)
}

func podNodeName(obj any) ([]string, error) {
	if pod, ok := obj.(*corev1.Pod); ok && pod.Spec.NodeName != "" {
		return []string{pod.Spec.NodeName}, nil
	}
	return nil, nil
}

// isOurNode tells the virtual nodes of this binding.
func (c *Controller) isOurNode(node *corev1.Node) bool {
	return node.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
		node.Labels[kubeoceanv1alpha1.LabelClusterID] == c.clusterID &&
		kubeoceanv1alpha1.PhysicalNodeNameOf(node) != ""
}

// physicalNodeOf is the physical node behind the virtual node pod is bound
// to, when that is a virtual node of this binding. Host port placeholders
// are never run.
func (c *Controller) physicalNodeOf(pod *corev1.Pod) (string, bool) {
	if pod.Spec.NodeName == "" || hostports.IsPlaceholder(pod) {
		return "", false
	}
	node, err := c.virtualNodes.Get(pod.Spec.NodeName)
	if err != nil || !c.isOurNode(node) {
		return "", false
	}
	return kubeoceanv1alpha1.PhysicalNodeNameOf(node), true
}

func (c *Controller) onOurNode(pod *corev1.Pod) bool {
	_, ok := c.physicalNodeOf(pod)
	return ok
}

// podsOnNode are the keys of the virtual pods bound to node.
func (c *Controller) podsOnNode(node *corev1.Node) []cache.ObjectName {
	objs, err := c.virtualPodIndex.ByIndex(PodsByNodeIndex, node.Name)
	if err != nil {
		return nil
	}
	keys := make([]cache.ObjectName, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			keys = append(keys, controller.ObjectKey(pod))
		}
	}
	return keys
}

// isManagedPod tells the physical pods of this binding. The informer is
// scoped to them already; the check keeps a wider one from making us act
// on another binding's pods.
func (c *Controller) isManagedPod(pod *corev1.Pod) bool {
	return pod.Namespace == c.mountNamespace && c.owner.Owns(pod)
}

// tokenSecretKeys maps a token Secret's event to its virtual pod. From its
// first event on the cache speaks for the Secret (podidentity.Secrets.Seen).
func (c *Controller) tokenSecretKeys(secret metav1.Object) []cache.ObjectName {
	c.identity.Seen(secret)
	return virtualKeys(secret)
}

// virtualKeys maps a physical object Kubeocean made for a virtual pod back
// to that pod, through its mapping annotations.
func virtualKeys[T interface{ GetAnnotations() map[string]string }](obj T) []cache.ObjectName {
	annotations := obj.GetAnnotations()
	namespace := annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace]
	name := annotations[kubeoceanv1alpha1.AnnotationVirtualPodName]
	if namespace == "" || name == "" {
		return nil
	}
	return []cache.ObjectName{{Namespace: namespace, Name: name}}
}

// virtualPodChanged drops the status-only updates (most of them: the
// bottom-up side mirrors every physical status change), except a phase
// change, which ends or starts the pod's token refreshes. Ephemeral
// containers (kubectl debug) are added through their own subresource.
func virtualPodChanged(oldPod, newPod *corev1.Pod) bool {
	return oldPod.Generation != newPod.Generation ||
		!maps.Equal(oldPod.Labels, newPod.Labels) ||
		!maps.Equal(oldPod.Annotations, newPod.Annotations) ||
		!oldPod.DeletionTimestamp.Equal(newPod.DeletionTimestamp) ||
		!ptr.Equal(oldPod.DeletionGracePeriodSeconds, newPod.DeletionGracePeriodSeconds) ||
		oldPod.Spec.NodeName != newPod.Spec.NodeName ||
		!ptr.Equal(oldPod.Spec.ActiveDeadlineSeconds, newPod.Spec.ActiveDeadlineSeconds) ||
		!maps.Equal(podspec.ImagesOf(&oldPod.Spec), podspec.ImagesOf(&newPod.Spec)) ||
		oldPod.Status.Phase != newPod.Status.Phase ||
		len(oldPod.Spec.EphemeralContainers) != len(newPod.Spec.EphemeralContainers)
}

// physicalPodChanged drops the physical kubelet's status updates except
// phase changes; what else matters is a deletion or a change of metadata.
func physicalPodChanged(oldPod, newPod *corev1.Pod) bool {
	return !oldPod.DeletionTimestamp.Equal(newPod.DeletionTimestamp) ||
		!maps.Equal(oldPod.Labels, newPod.Labels) ||
		!maps.Equal(oldPod.Annotations, newPod.Annotations) ||
		oldPod.Status.Phase != newPod.Status.Phase
}
