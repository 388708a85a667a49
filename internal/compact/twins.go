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

package compact

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// TwinStatuses lets a cached virtual pod share, with the cached physical
// pod it was made for, the parts of its status that the status copy
// (bottomup/podstatus) takes over from that pod as they are: container
// statuses, pod and host IPs, start time. Every synced pod is cached
// twice, and once its status is copied these parts say the same thing in
// both caches. Conditions are not looked up here: the copy merges them
// with the virtual pod's own, so they seldom match in order and content;
// when they do, the pod cache's transform shares them by value with any
// pod's (conditionLists).
//
// A part is shared only when it equals the physical pod's, and only with
// the physical pod of the virtual pod's mapping annotations that was made
// for this virtual pod (its UID annotation). Cached objects are read-only,
// and a DeepCopy of either pod separates the parts again.
type TwinStatuses struct {
	// Physical is the cache of the binding's physical pods (PhysicalPod
	// records, or Pods where an informer has no transform); nil until the
	// syncer asks for it, and then set before the informers start.
	Physical cache.Indexer
}

// VirtualPods is Pods followed by twins.Share: the transform of the
// virtual pods a syncer runs. twins may be nil: nothing is shared.
func (t Transforms) VirtualPods(twins *TwinStatuses) func(obj any) (any, error) {
	return func(obj any) (any, error) {
		obj, err := t.Pods(obj)
		if pod, ok := obj.(*corev1.Pod); ok && err == nil {
			twins.Share(pod)
		}
		return obj, err
	}
}

// Share points the status parts of virtual that equal those of its
// physical twin at the twin's.
func (t *TwinStatuses) Share(virtual *corev1.Pod) {
	if t == nil || t.Physical == nil {
		return
	}
	namespace := virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace]
	name := virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
	if namespace == "" || name == "" {
		return
	}
	obj, exists, err := t.Physical.GetByKey(namespace + "/" + name)
	if err != nil || !exists {
		return
	}
	physical, ok := obj.(metav1.Object)
	twin := PhysicalPodStatus(obj)
	if !ok || twin == nil || physical.GetAnnotations()[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(virtual.UID) {
		return
	}
	mine := &virtual.Status
	mine.ContainerStatuses = sameOrOwn(mine.ContainerStatuses, twin.ContainerStatuses)
	mine.InitContainerStatuses = sameOrOwn(mine.InitContainerStatuses, twin.InitContainerStatuses)
	mine.EphemeralContainerStatuses = sameOrOwn(mine.EphemeralContainerStatuses, twin.EphemeralContainerStatuses)
	mine.PodIPs = sameOrOwn(mine.PodIPs, twin.PodIPs)
	mine.HostIPs = sameOrOwn(mine.HostIPs, twin.HostIPs)
	if mine.StartTime != nil && twin.StartTime != nil && mine.StartTime.Equal(twin.StartTime) {
		mine.StartTime = twin.StartTime
	}
}

// sameOrOwn returns twin's slice when it holds what mine does, else mine.
func sameOrOwn[T any](mine, twin []T) []T {
	if len(mine) == 0 || len(mine) != len(twin) || !reflect.DeepEqual(mine, twin) {
		return mine
	}
	return twin
}
