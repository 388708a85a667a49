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

package csinode

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

func TestNewValidatesOptions(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	valid := func() Options {
		return Options{
			ClusterID: testClusterID, VirtualClient: kubefake.NewClientset().StorageV1(),
			PhysicalCSINodes: factory.Storage().V1().CSINodes(), VirtualCSINodes: factory.Storage().V1().CSINodes(),
			VirtualNodes: factory.Core().V1().Nodes(), Recorder: record.NewFakeRecorder(1),
		}
	}
	if _, err := New(valid()); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
	for name, mutate := range map[string]func(*Options){
		"no cluster ID":     func(o *Options) { o.ClusterID = "" },
		"no client":         func(o *Options) { o.VirtualClient = nil },
		"no node informer":  func(o *Options) { o.VirtualNodes = nil },
		"no event recorder": func(o *Options) { o.Recorder = nil },
	} {
		opts := valid()
		mutate(&opts)
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted the options", name)
		}
	}
}

func TestEventHandlers(t *testing.T) {
	f := newFixture(t, virtualNode())
	var got []string
	enqueue := func(key string) { got = append(got, key) }
	physical := f.c.physicalCSINodeHandler()
	physical.Enqueue = enqueue
	mirrors := f.c.virtualCSINodeHandler()
	mirrors.Enqueue = enqueue
	nodes := f.c.virtualNodeHandler()
	nodes.Enqueue = enqueue

	relabelledPhysical := physicalCSINode(driver("a.csi", "n1", 0))
	relabelledPhysical.Labels["physical"] = "changed"
	untwinned := physicalCSINode(driver("a.csi", "n1", 0))
	untwinned.Name = "worker-without-virtual-node"
	statusOnly := virtualNode()
	statusOnly.Status.Phase = corev1.NodeRunning
	tests := []struct {
		name    string
		handler cache.ResourceEventHandler
		oldObj  metav1.Object
		newObj  metav1.Object
		want    []string
	}{
		{"physical drivers change", physical, physicalCSINode(), physicalCSINode(driver("a.csi", "n1", 0)), []string{physicalName}},
		{"physical metadata only", physical, physicalCSINode(driver("a.csi", "n1", 0)), relabelledPhysical, nil},
		{"physical node without a virtual twin", physical, untwinned.DeepCopy(), untwinned, nil},
		{"mirror changed by someone", mirrors, ourMirror(), ourMirror(driver("x", "y", 0)), []string{physicalName}},
		{"foreign CSINode", mirrors, foreignCSINode(), foreignCSINode(), nil},
		{"virtual node status", nodes, virtualNode(), statusOnly, nil},
		{"virtual node repointed", nodes, virtualNode(), relabelled(virtualNode(), "worker-2"), []string{physicalName, "worker-2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			tt.oldObj.SetResourceVersion("1")
			tt.newObj.SetResourceVersion("2")
			tt.handler.OnUpdate(tt.oldObj, tt.newObj)
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}

	got = nil
	mirrors.OnDelete(cache.DeletedFinalStateUnknown{Key: virtualName, Obj: ourMirror()})
	nodes.OnDelete(virtualNode())
	if want := []string{physicalName, physicalName}; !slices.Equal(got, want) {
		t.Errorf("deletes enqueued %v, want %v", got, want)
	}
}
