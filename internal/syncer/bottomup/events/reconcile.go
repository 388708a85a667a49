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

package events

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// retryWrite is when an aggregate is tried again after its virtual event
// changed under the write (created or expired meanwhile).
const retryWrite = 100 * time.Millisecond

// reconcile brings the virtual event of one aggregate of physical events
// up to their summed count. The count is computed from the physical
// events each time, and the virtual event has the same name in every run,
// so recording is idempotent: a restarted syncer reads the virtual event
// once and writes only what happened since.
func (c *Controller) reconcile(ctx context.Context, k key) (controller.Result, error) {
	informer := c.podEvents
	if k.node {
		informer = c.nodeEvents
	}
	objs, err := informer.GetIndexer().ByIndex(eventIndex, k.aggregate)
	if err != nil || len(objs) == 0 {
		return controller.Result{}, err
	}
	events := make([]*corev1.Event, 0, len(objs))
	for _, obj := range objs {
		if e, ok := obj.(*corev1.Event); ok {
			events = append(events, e)
		}
	}
	if len(events) == 0 {
		return controller.Result{}, nil
	}
	var t target
	var ok bool
	if k.node {
		t, ok = c.nodeTarget(events[0])
	} else {
		t, ok = c.podTarget(events[0])
	}
	if !ok {
		return controller.Result{}, nil
	}
	return c.record(ctx, t.virtualEvent(c.clusterID, events))
}

// podTarget is the virtual pod whose twin the event's physical pod is,
// proven by what the physical pod records (the virtual pod's namespace,
// name and UID, which only the syncer writes on physical pods), never by
// names: the physical pod must be in the binding's pod cache with the
// event's UID and identity, and the virtual pod in the cache with the UID
// the physical pod recorded.
func (c *Controller) podTarget(e *corev1.Event) (target, bool) {
	o := e.InvolvedObject
	physical, err := c.physicalPods.Pods(o.Namespace).Get(o.Name)
	if err != nil || physical.UID != o.UID || physical.Namespace != c.mountNamespace || !c.owner.Owns(physical) {
		return target{}, false
	}
	recorded := physical.Annotations
	namespace, name := recorded[kubeoceanv1alpha1.AnnotationVirtualPodNamespace], recorded[kubeoceanv1alpha1.AnnotationVirtualPodName]
	uid := types.UID(recorded[kubeoceanv1alpha1.AnnotationVirtualPodUID])
	if namespace == "" || name == "" || uid == "" {
		return target{}, false
	}
	virtual, err := c.virtualPods.Pods(namespace).Get(name)
	if err != nil || virtual.UID != uid {
		return target{}, false
	}
	t := target{
		ref: podRef(namespace, name, uid),
		names: map[string]string{
			physical.Name:                            name,
			physical.Namespace + "/" + physical.Name: namespace + "/" + name,
			physical.Namespace:                       namespace,
		},
		hosts: map[string]string{},
	}
	if node := physical.Spec.NodeName; node != "" {
		t.names[node] = kubeoceanv1alpha1.VirtualNodeName(c.clusterID, node)
		t.hosts[node] = t.names[node]
	}
	return t, true
}

// nodeTarget is the virtual node of the event's physical node.
func (c *Controller) nodeTarget(e *corev1.Event) (target, bool) {
	physical := e.InvolvedObject.Name
	virtual := c.virtualNodeOf(physical)
	if virtual == nil {
		return target{}, false
	}
	return target{
		ref:   corev1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: virtual.Name, UID: virtual.UID},
		names: map[string]string{physical: virtual.Name},
		hosts: map[string]string{physical: virtual.Name},
	}, true
}

// virtualNodeOf is the binding's virtual node that stands for the
// physical node, or nil.
func (c *Controller) virtualNodeOf(physical string) *corev1.Node {
	if physical == "" {
		return nil
	}
	virtual, err := c.virtualNodes.Get(kubeoceanv1alpha1.VirtualNodeName(c.clusterID, physical))
	if err != nil || virtual.Labels[kubeoceanv1alpha1.LabelClusterID] != c.clusterID || kubeoceanv1alpha1.PhysicalNodeNameOf(virtual) != physical {
		return nil
	}
	return virtual
}

// record writes desired unless the virtual event already counts as much:
// a create when none is known, else a patch of its count and last time,
// each under the token buckets. A virtual event not known yet is created
// (one request when it is new, the common case); one that exists, made by
// an earlier run of the syncer, is then read once, and patched only if the
// physical events count more. Without a token, a count update waits, and
// by then carries every occurrence that came meanwhile, so a pod failing
// thousands of times a second costs one write per token; an event not
// known yet is dropped (and counted), and tried again with its next
// occurrence, so a storm of distinct messages costs no request beyond the
// tokens either.
func (c *Controller) record(ctx context.Context, desired *corev1.Event) (controller.Result, error) {
	logger := klog.FromContext(ctx).WithValues("event", klog.KObj(desired), "involvedObject", desired.InvolvedObject.Name)
	cacheKey := desired.Namespace + "/" + desired.Name
	current, known := c.remembered(cacheKey)
	if known && desired.Count <= current {
		return controller.Result{}, nil
	}
	if !known && desired.LastTimestamp.Time.Before(c.staleBefore) {
		logger.V(4).Info("Not recording physical events that all happened before the syncer started", "count", desired.Count)
		return controller.Result{}, nil
	}
	if wait, reason := c.limiter.take(objectKey(desired.InvolvedObject), c.clock.Now()); wait > 0 {
		if known && current > 0 {
			return controller.Result{RequeueAfter: wait}, nil
		}
		c.countDropped(desired, reason)
		logger.V(2).Info("Dropped a physical event: no token to record it", "reason", reason, "count", desired.Count)
		return controller.Result{}, nil
	}
	events := c.virtualClient.Events(desired.Namespace)
	var err error
	if current == 0 {
		_, err = events.Create(ctx, desired, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Made by an earlier run: read what it counts.
			return controller.Result{RequeueAfter: retryWrite}, c.readCount(ctx, desired)
		}
	} else {
		patch, _ := json.Marshal(map[string]any{"count": desired.Count, "lastTimestamp": desired.LastTimestamp})
		_, err = events.Patch(ctx, desired.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			// Expired in the virtual cluster: made anew.
			c.written.Add(cacheKey, int32(0))
			return controller.Result{RequeueAfter: retryWrite}, nil
		}
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("recording event %s: %w", cacheKey, err)
	}
	c.written.Add(cacheKey, desired.Count)
	logger.V(4).Info("Recorded physical events", "reason", desired.Reason, "count", desired.Count)
	return controller.Result{}, nil
}

// remembered is the count of the virtual event as last written or read.
func (c *Controller) remembered(cacheKey string) (int32, bool) {
	if known, ok := c.written.Get(cacheKey); ok {
		return known.(int32), true
	}
	return 0, false
}

// readCount reads the count of a virtual event an earlier run made.
func (c *Controller) readCount(ctx context.Context, desired *corev1.Event) error {
	got, err := c.virtualClient.Events(desired.Namespace).Get(ctx, desired.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	c.written.Add(desired.Namespace+"/"+desired.Name, max(got.Count, 1))
	return nil
}

// countDropped counts the occurrences of desired not counted as dropped
// before: an aggregate dropped again with its next occurrence adds one.
func (c *Controller) countDropped(desired *corev1.Event, reason string) {
	cacheKey := desired.Namespace + "/" + desired.Name
	var before int32
	if counted, ok := c.droppedCounts.Get(cacheKey); ok {
		before = counted.(int32)
	}
	if desired.Count > before {
		c.dropped.WithLabelValues(c.binding, reason).Add(float64(desired.Count - before))
		c.droppedCounts.Add(cacheKey, desired.Count)
	}
}

// objectKey names the token bucket of a virtual object.
func objectKey(ref corev1.ObjectReference) string {
	return ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}
