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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

var testOwner = ownership.Owner{ClusterID: testClusterID, BindingUID: testBinding}

const (
	testClusterID = "c1"
	testBinding   = types.UID("binding-uid")
	mountNS       = "mount"
	virtualNS     = "team-a"
	virtualName   = "web"
	physicalName  = "web-0123456789abcdef"
	virtualUID    = types.UID("virtual-uid")
	physicalUID   = types.UID("physical-uid")
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// virtualPod is a bound virtual pod mapped to the physical pod physicalName.
func virtualPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: virtualNS, Name: virtualName, UID: virtualUID, ResourceVersion: "10",
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: mountNS,
				kubeoceanv1alpha1.AnnotationPhysicalPodName:      physicalName,
			},
		},
		Spec:   corev1.PodSpec{NodeName: "vnode-c1-node-1", Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		Status: pendingStatus(),
	}
}

// syncedVirtualPod is virtualPod once it reflects physicalPod.
func syncedVirtualPod() *corev1.Pod {
	pod := virtualPod()
	pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] = string(physicalUID)
	pod.Annotations[kubeoceanv1alpha1.AnnotationLastSyncTime] = "2026-01-01T00:00:00Z"
	pod.Status = mirroredStatus(pod.Status, physicalPod().Status)
	return pod
}

// physicalPod is the running physical pod made for virtualPod.
func physicalPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: physicalName, UID: physicalUID, ResourceVersion: "20",
			Labels: testOwner.Stamp(nil),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtualNS,
				kubeoceanv1alpha1.AnnotationVirtualPodName:      virtualName,
				kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(virtualUID),
			},
		},
		Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "pause"}}},
		Status: runningStatus(),
	}
}

// fixture is a controller over fake clusters. The informers are never
// started: their indexers are seeded, so the cache can disagree with the
// live cluster on purpose.
type fixture struct {
	physicalKube *kubefake.Clientset
	virtualKube  *kubefake.Clientset
	physicalPods cache.Indexer
	virtualPods  cache.Indexer
	recorder     *record.FakeRecorder
	controller   *Controller
}

// newFixture seeds the physical cluster and its cache with physical, the
// virtual cache with cached and the live virtual cluster with live.
func newFixture(t *testing.T, physical, cached, live []*corev1.Pod) *fixture {
	t.Helper()
	f := &fixture{
		physicalKube: kubefake.NewClientset(objects(physical)...),
		virtualKube:  kubefake.NewClientset(objects(live)...),
		recorder:     record.NewFakeRecorder(10),
	}
	physicalInformer := kubeinformers.NewSharedInformerFactory(f.physicalKube, 0).Core().V1().Pods()
	virtualInformer := kubeinformers.NewSharedInformerFactory(f.virtualKube, 0).Core().V1().Pods()
	f.physicalPods = physicalInformer.Informer().GetIndexer()
	f.virtualPods = virtualInformer.Informer().GetIndexer()
	for _, pod := range physical {
		fixtures.MustAdd(t, f.physicalPods, pod.DeepCopy())
	}
	for _, pod := range cached {
		fixtures.MustAdd(t, f.virtualPods, pod.DeepCopy())
	}
	c, err := New(Options{
		ClusterID:      testClusterID,
		BindingUID:     testBinding,
		MountNamespace: mountNS,
		PhysicalClient: f.physicalKube.CoreV1(),
		VirtualClient:  f.virtualKube.CoreV1(),
		PhysicalPods:   physicalInformer,
		VirtualPods:    virtualInformer,
		Recorder:       f.recorder,
		Clock:          testingclock.NewFakePassiveClock(now),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.controller = c
	return f
}

func objects(pods []*corev1.Pod) []runtime.Object {
	var objs []runtime.Object
	for _, pod := range pods {
		objs = append(objs, pod.DeepCopy())
	}
	return objs
}

func (f *fixture) reconcile(t *testing.T) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	result, err := f.controller.reconcile(ctx, cache.ObjectName{Namespace: mountNS, Name: physicalName})
	if result.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %v, want 0", result.RequeueAfter)
	}
	return err
}

// reconcileResult reconciles the physical pod and returns the result,
// which may ask to look again later; an error fails the test.
func (f *fixture) reconcileResult(t *testing.T) controller.Result {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	result, err := f.controller.reconcile(ctx, cache.ObjectName{Namespace: mountNS, Name: physicalName})
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	return result
}

func (f *fixture) clearActions() {
	f.physicalKube.ClearActions()
	f.virtualKube.ClearActions()
}
