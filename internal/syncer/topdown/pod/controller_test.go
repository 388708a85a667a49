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
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

func TestNewValidates(t *testing.T) {
	virtual := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1()
	complete := Options{
		ClusterID: testClusterID, BindingUID: testBinding, MountNamespace: mountNS,
		VirtualClient: kubefake.NewClientset().CoreV1(), PhysicalClient: kubefake.NewClientset().CoreV1(),
		VirtualPods: virtual.Pods(), VirtualNodes: virtual.Nodes(), PhysicalPods: virtual.Pods(), PhysicalSecrets: virtual.Secrets(),
		Dependents: &fakeDependents{}, Recorder: record.NewFakeRecorder(1),
	}
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{name: "cluster ID", change: func(o *Options) { o.ClusterID = "" }, want: "ClusterID"},
		{name: "clients", change: func(o *Options) { o.PhysicalClient = nil }, want: "PhysicalClient"},
		{name: "informers", change: func(o *Options) { o.PhysicalSecrets = nil }, want: "PhysicalSecrets"},
		{name: "dependents", change: func(o *Options) { o.Dependents = nil }, want: "Dependents"},
		{name: "API server address", change: func(o *Options) { o.VirtualAPIServer = "no-port" }, want: "VirtualAPIServer"},
	}
	for _, tt := range tests {
		opts := complete
		tt.change(&opts)
		if _, err := New(opts); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New error = %v, want one naming %s", tt.name, err, tt.want)
		}
	}
}

func TestEventKeys(t *testing.T) {
	other := podtest.BoundPod()
	other.Name, other.Spec.NodeName = "elsewhere", "other-node"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.BoundPod(), other}})
	c := f.controller

	if keys := c.podsOnNode(ourNode()); !slices.Equal(keys, []cache.ObjectName{podKey}) {
		t.Errorf("pods on node = %v, want %v", keys, podKey)
	}
	physical := physicalFor(podtest.BoundPod())
	if keys := virtualKeys(physical); !slices.Equal(keys, []cache.ObjectName{podKey}) {
		t.Errorf("keys of physical pod = %v, want %v", keys, podKey)
	}
	if keys := virtualKeys(tokenSecret(virtualUID, now)); !slices.Equal(keys, []cache.ObjectName{podKey}) {
		t.Errorf("keys of token Secret = %v, want %v", keys, podKey)
	}
	if keys := virtualKeys(&corev1.Pod{}); len(keys) != 0 {
		t.Errorf("keys of unmapped pod = %v, want none", keys)
	}
	if !c.isManagedPod(physical) || c.isManagedPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: mountNS}}) {
		t.Errorf("isManagedPod wrong")
	}
	foreignSecret := tokenSecret(virtualUID, now)
	delete(foreignSecret.Labels, kubeoceanv1alpha1.LabelPodToken)
	if !c.identity.IsTokenSecret(tokenSecret(virtualUID, now)) || c.identity.IsTokenSecret(foreignSecret) {
		t.Errorf("isTokenSecret wrong")
	}
	if !c.onOurNode(podtest.BoundPod()) || c.onOurNode(other) {
		t.Errorf("onOurNode wrong")
	}
}

func TestVirtualPodChanged(t *testing.T) {
	base := podtest.BoundPod()
	tests := []struct {
		name   string
		change func(*corev1.Pod)
		want   bool
	}{
		{name: "status only", change: func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.9" }, want: false},
		{name: "phase", change: func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }, want: true},
		{name: "label", change: func(p *corev1.Pod) { p.Labels["x"] = "y" }, want: true},
		{name: "deletion", change: func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }, want: true},
		{name: "image", change: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "nginx:2" }, want: true},
	}
	for _, tt := range tests {
		changed := base.DeepCopy()
		tt.change(changed)
		if got := virtualPodChanged(base, changed); got != tt.want {
			t.Errorf("%s: changed = %v, want %v", tt.name, got, tt.want)
		}
	}
	physical := physicalFor(base)
	running := physical.DeepCopy()
	running.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if physicalPodChanged(physical, running) {
		t.Errorf("a physical condition change counts")
	}
}

// TestRun wires the controller to running informers over fake clusters: a
// pod bound to a node the node informer has not shown yet is created once
// the node shows up.
func TestRun(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	virtualKube, physicalKube := kubefake.NewClientset(), kubefake.NewClientset()
	virtual := kubeinformers.NewSharedInformerFactory(virtualKube, 0)
	physical := kubeinformers.NewSharedInformerFactoryWithOptions(physicalKube, 0, kubeinformers.WithNamespace(mountNS))
	c, err := New(Options{
		ClusterID: testClusterID, BindingUID: testBinding, MountNamespace: mountNS,
		VirtualClient: virtualKube.CoreV1(), PhysicalClient: physicalKube.CoreV1(),
		VirtualPods: virtual.Core().V1().Pods(), VirtualNodes: virtual.Core().V1().Nodes(),
		PhysicalPods: physical.Core().V1().Pods(), PhysicalSecrets: physical.Core().V1().Secrets(),
		Dependents: &fakeDependents{}, Recorder: record.NewFakeRecorder(10),
	})
	if err != nil {
		t.Fatal(err)
	}
	virtual.Start(ctx.Done())
	physical.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx, 2)
	}()
	defer func() {
		cancel()
		<-done
		virtual.Shutdown()
		physical.Shutdown()
	}()

	if _, err := virtualKube.CoreV1().Pods(virtualNS).Create(ctx, podtest.BoundPod(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := virtualKube.CoreV1().Nodes().Create(ctx, ourNode(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		pod, err := physicalKube.CoreV1().Pods(mountNS).Get(ctx, physicalName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		return pod.Spec.NodeName == physicalNode && pod.Labels[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean, nil
	})
	if err != nil {
		t.Fatalf("physical pod never appeared: %v", err)
	}
}
