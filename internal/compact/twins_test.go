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
	"testing"
	"time"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// A cached virtual pod shares the container statuses, IPs and start time
// its status copy took over from its physical twin, and only those that
// equal the twin's, and only with the twin made for it.
func TestVirtualPodSharesTheStatusCopiedFromItsTwin(t *testing.T) {
	// The syncer's cache of physical pods holds records (testTransforms.Physical);
	// an informer without that transform, Pods. Through testTransforms.Physical,
	// the conditions are shared by value (conditionLists), twins or not:
	// there the test leaves them out.
	t.Run("record", func(t *testing.T) {
		testTwins(t, func(pod *corev1.Pod) any { record, _ := testTransforms.Physical(pod); return record }, false)
	})
	t.Run("pod", func(t *testing.T) { testTwins(t, func(pod *corev1.Pod) any { return pod }, true) })
}

func testTwins(t *testing.T, cachedForm func(*corev1.Pod) any, checkConditions bool) {
	started := metav1.NewTime(time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC))
	status := corev1.PodStatus{
		Phase:      corev1.PodRunning,
		StartTime:  &started,
		PodIPs:     []corev1.PodIP{{IP: "10.0.0.7"}},
		HostIPs:    []corev1.HostIP{{IP: "192.168.0.3"}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, ContainerID: "containerd://0123",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}},
	}
	physical := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "web-x", Annotations: map[string]string{
			kubeoceanv1alpha1.AnnotationVirtualPodUID: "virtual-uid"}},
		Status: *status.DeepCopy(),
	}
	store := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := store.Add(cachedForm(physical)); err != nil {
		t.Fatal(err)
	}
	twins := &TwinStatuses{Physical: store}
	virtualPod := func(uid string, status corev1.PodStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", UID: "virtual-uid", Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "mount", kubeoceanv1alpha1.AnnotationPhysicalPodName: "web-x",
				kubeoceanv1alpha1.AnnotationPhysicalPodUID: uid}},
			Status: *status.DeepCopy(),
		}
	}
	cached := func(pod *corev1.Pod) *corev1.Pod {
		t.Helper()
		want := pod.DeepCopy()
		obj, err := testTransforms.VirtualPods(twins)(pod)
		if err != nil {
			t.Fatal(err)
		}
		got := obj.(*corev1.Pod)
		if !reflect.DeepEqual(got.Status, want.Status) {
			t.Fatalf("the cached status changed: %+v, want %+v", got.Status, want.Status)
		}
		return got
	}
	shares := func(pod *corev1.Pod) map[string]bool {
		parts := map[string]bool{
			"containerStatuses": unsafe.SliceData(pod.Status.ContainerStatuses) == unsafe.SliceData(physical.Status.ContainerStatuses),
			"podIPs":            unsafe.SliceData(pod.Status.PodIPs) == unsafe.SliceData(physical.Status.PodIPs),
			"hostIPs":           unsafe.SliceData(pod.Status.HostIPs) == unsafe.SliceData(physical.Status.HostIPs),
			"startTime":         pod.Status.StartTime == physical.Status.StartTime,
		}
		if checkConditions {
			parts["conditions"] = unsafe.SliceData(pod.Status.Conditions) == unsafe.SliceData(physical.Status.Conditions)
		}
		return parts
	}

	got := shares(cached(virtualPod("physical-uid", status)))
	want := map[string]bool{"containerStatuses": true, "podIPs": true, "hostIPs": true, "startTime": true}
	if checkConditions {
		want["conditions"] = false
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("a virtual pod with its twin's status shares %v, want %v", got, want)
	}

	restarted := *status.DeepCopy()
	restarted.ContainerStatuses[0].RestartCount = 1
	if got := shares(cached(virtualPod("physical-uid", restarted))); got["containerStatuses"] || !got["podIPs"] {
		t.Errorf("a virtual pod whose container statuses differ shares %v, want its own container statuses and the IPs shared", got)
	}

	other := virtualPod("physical-uid", status)
	other.UID = "another-uid"
	for part, shared := range shares(cached(other)) {
		if shared {
			t.Errorf("a virtual pod shares %s with a physical pod made for another", part)
		}
	}

	unmapped := virtualPod("", status)
	unmapped.Annotations = nil
	for part, shared := range shares(cached(unmapped)) {
		if shared {
			t.Errorf("a virtual pod without a physical pod shares %s", part)
		}
	}
}
