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

package lease

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestNewValidatesOptions(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	valid := func() Options {
		return Options{
			ClusterID: testClusterID, Client: kubefake.NewClientset().CoordinationV1(),
			VirtualNodes: factory.Core().V1().Nodes(), Leases: factory.Coordination().V1().Leases(),
			PhysicalNodes: factory.Core().V1().Nodes(),
		}
	}
	if _, err := New(valid()); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
	for name, mutate := range map[string]func(*Options){
		"no cluster ID":                  func(o *Options) { o.ClusterID = "" },
		"no client":                      func(o *Options) { o.Client = nil },
		"no leases informer":             func(o *Options) { o.Leases = nil },
		"renew interval beyond duration": func(o *Options) { o.RenewInterval = time.Minute },
	} {
		opts := valid()
		mutate(&opts)
		if _, err := New(opts); err == nil {
			t.Errorf("%s: New accepted the options", name)
		}
	}
}

func TestEventHandlers(t *testing.T) {
	f := newFixture(t, virtualNode(virtualName, "worker-1"))
	var got []string
	enqueue := func(key string) { got = append(got, key) }

	physical := f.c.physicalNodeHandler()
	physical.Enqueue = enqueue
	leases := f.c.leaseHandler()
	leases.Enqueue = enqueue
	virtual := f.c.virtualNodeHandler()
	virtual.Enqueue = enqueue

	withRV := func(obj metav1.Object, rv string) metav1.Object { obj.SetResourceVersion(rv); return obj }
	renewed := ourLease(virtualName, testStart)
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: testStart.Add(10 * time.Second)}
	otherHolder := ourLease(virtualName, testStart)
	otherHolder.Spec.HolderIdentity = ptr.To("someone")
	shorter := ourLease(virtualName, testStart)
	shorter.Spec.LeaseDurationSeconds = ptr.To[int32](5)
	orphaned := ourLease(virtualName, testStart)
	orphaned.OwnerReferences = nil
	annotated := ourLease(virtualName, testStart)
	annotated.Annotations = map[string]string{"example.com/note": "x"}
	relabelled := virtualNode(virtualName, "worker-2")
	statusOnly := virtualNode(virtualName, "worker-1")
	statusOnly.Status.Phase = corev1.NodeRunning
	tests := []struct {
		name    string
		handler cache.ResourceEventHandler
		oldObj  metav1.Object
		newObj  metav1.Object
		want    []string
	}{
		{"physical heartbeat", physical, physicalNode("worker-1", corev1.ConditionTrue), physicalNode("worker-1", corev1.ConditionTrue), nil},
		{"physical turns NotReady", physical, physicalNode("worker-1", corev1.ConditionTrue), physicalNode("worker-1", corev1.ConditionFalse), []string{virtualName}},
		{"physical node without a virtual twin", physical, physicalNode("worker-9", corev1.ConditionTrue), physicalNode("worker-9", corev1.ConditionFalse), nil},
		{"our renewal", leases, ourLease(virtualName, testStart), renewed, nil},
		{"lease rewritten by someone", leases, ourLease(virtualName, testStart), foreignLease(virtualName), []string{virtualName}},
		{"holder changed", leases, ourLease(virtualName, testStart), otherHolder, []string{virtualName}},
		{"duration changed", leases, ourLease(virtualName, testStart), shorter, []string{virtualName}},
		{"owner reference dropped", leases, ourLease(virtualName, testStart), orphaned, []string{virtualName}},
		{"annotated by someone", leases, ourLease(virtualName, testStart), annotated, nil},
		{"virtual node status", virtual, virtualNode(virtualName, "worker-1"), statusOnly, nil},
		{"virtual node repointed", virtual, virtualNode(virtualName, "worker-1"), relabelled, []string{virtualName}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			tt.handler.OnUpdate(withRV(tt.oldObj, "1"), withRV(tt.newObj, "2"))
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}

	// The handlers read cached objects, which they must leave as they are.
	if renewed.Spec.RenewTime == nil || renewed.ResourceVersion != "2" {
		t.Errorf("the lease handler changed the cached lease: renewTime %v, resourceVersion %q", renewed.Spec.RenewTime, renewed.ResourceVersion)
	}

	got = nil
	deleted := ourLease(virtualName, testStart)
	leases.OnDelete(cache.DeletedFinalStateUnknown{Key: "kube-node-lease/" + virtualName, Obj: deleted})
	foreign := foreignLease("kubelet-node")
	foreign.Labels = map[string]string{kubeoceanv1alpha1.LabelManagedBy: "someone-else"}
	leases.OnDelete(foreign)
	if !slices.Equal(got, []string{virtualName}) {
		t.Errorf("lease deletes enqueued %v, want only ours %v", got, virtualName)
	}
}
