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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

func TestNewValidates(t *testing.T) {
	informer := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Pods()
	client := kubefake.NewClientset().CoreV1()
	valid := Options{
		ClusterID: testClusterID, BindingUID: testBinding, MountNamespace: mountNS,
		PhysicalClient: client, VirtualClient: client,
		PhysicalPods: informer, VirtualPods: informer,
		Recorder: record.NewFakeRecorder(1),
	}
	if _, err := New(valid); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"no cluster ID", func(o *Options) { o.ClusterID = "" }, "ClusterID"},
		{"no mount namespace", func(o *Options) { o.MountNamespace = "" }, "MountNamespace"},
		{"no virtual client", func(o *Options) { o.VirtualClient = nil }, "VirtualClient"},
		{"no physical informer", func(o *Options) { o.PhysicalPods = nil }, "PhysicalPods"},
		{"no recorder", func(o *Options) { o.Recorder = nil }, "Recorder"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := valid
			tt.mutate(&opts)
			if _, err := New(opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v, want one naming %s", err, tt.want)
			}
		})
	}
}

func TestIsManaged(t *testing.T) {
	c := &Controller{mountNamespace: mountNS, owner: testOwner}
	otherVirtualCluster := ownership.Owner{ClusterID: testClusterID, BindingUID: "other-binding-uid"}
	tests := []struct {
		name      string
		namespace string
		labels    map[string]string
		want      bool
	}{
		{"ours", mountNS, testOwner.Stamp(nil), true},
		{"another binding's, same cluster ID", mountNS, otherVirtualCluster.Stamp(nil), false},
		{"older version's, without identity", mountNS, map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}, false},
		{"no label", mountNS, nil, false},
		{"other manager", mountNS, map[string]string{kubeoceanv1alpha1.LabelManagedBy: "someone-else"}, false},
		{"other namespace", "default", testOwner.Stamp(nil), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: "p", Labels: tt.labels}}
			if got := c.isManaged(pod); got != tt.want {
				t.Errorf("isManaged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPhysicalKeys(t *testing.T) {
	c := &Controller{mountNamespace: mountNS}
	tests := []struct {
		name        string
		annotations map[string]string
		want        []cache.ObjectName
	}{
		{"mapped", map[string]string{
			kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: mountNS,
			kubeoceanv1alpha1.AnnotationPhysicalPodName:      physicalName,
		}, []cache.ObjectName{{Namespace: mountNS, Name: physicalName}}},
		{"not mapped yet: where the name rule puts it", nil, []cache.ObjectName{{Namespace: mountNS, Name: kubeoceanv1alpha1.PhysicalName(virtualNS, virtualName)}}},
		{"no name", map[string]string{kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: mountNS}, nil},
		{"another binding's mount namespace", map[string]string{
			kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "other-mount",
			kubeoceanv1alpha1.AnnotationPhysicalPodName:      physicalName,
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: virtualNS, Name: virtualName, Annotations: tt.annotations}}
			if got := c.physicalKeys(pod); !slices.Equal(got, tt.want) {
				t.Errorf("physicalKeys = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRunEndToEnd runs the controller on fake clusters with started
// informers that resync often: the running physical pod costs exactly one
// status write (which also records its UID), resyncs and the echoes of our own
// writes cost none, and a virtual pod deleted later takes its physical pod
// with it, through the virtual pod handler.
func TestRunEndToEnd(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	physicalKube := kubefake.NewClientset(physicalPod())
	virtualKube := kubefake.NewClientset(virtualPod())
	const resync = 50 * time.Millisecond
	physicalFactory := kubeinformers.NewSharedInformerFactory(physicalKube, resync)
	virtualFactory := kubeinformers.NewSharedInformerFactory(virtualKube, resync)
	c, err := New(Options{
		ClusterID: testClusterID, BindingUID: testBinding, MountNamespace: mountNS,
		PhysicalClient: physicalKube.CoreV1(), VirtualClient: virtualKube.CoreV1(),
		PhysicalPods: physicalFactory.Core().V1().Pods(), VirtualPods: virtualFactory.Core().V1().Pods(),
		Recorder: record.NewFakeRecorder(10),
	})
	if err != nil {
		t.Fatal(err)
	}
	physicalFactory.Start(ctx.Done())
	virtualFactory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	}()
	defer func() {
		cancel()
		<-done
		physicalFactory.Shutdown()
		virtualFactory.Shutdown()
	}()

	pods := virtualKube.CoreV1().Pods(virtualNS)
	poll := func(what string, condition func(ctx context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, condition); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	poll("status and UID on the virtual pod", func(ctx context.Context) (bool, error) {
		pod, err := pods.Get(ctx, virtualName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodRunning &&
			pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] == string(physicalUID), nil
	})

	wantWrites := []string{"update pods/status"}
	if got := fixtures.Verbs(fixtures.Writes(virtualKube.Actions())); !slices.Equal(got, wantWrites) {
		t.Errorf("virtual writes = %v, want %v", got, wantWrites)
	}
	time.Sleep(10 * resync)
	if got := fixtures.Verbs(fixtures.Writes(virtualKube.Actions())); !slices.Equal(got, wantWrites) {
		t.Errorf("after resyncs, virtual writes = %v, want still %v", got, wantWrites)
	}
	if got := fixtures.Writes(physicalKube.Actions()); len(got) != 0 {
		t.Errorf("physical writes = %v, want none", fixtures.Verbs(got))
	}

	if err := pods.Delete(ctx, virtualName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll("physical pod deleted", func(ctx context.Context) (bool, error) {
		_, err := physicalKube.CoreV1().Pods(mountNS).Get(ctx, physicalName, metav1.GetOptions{})
		return err != nil, nil
	})
}
