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
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const (
	testClusterID = "c1"
	physicalName  = "worker-1"
)

var virtualName = kubeoceanv1alpha1.VirtualNodeName(testClusterID, physicalName)

// fixture is a controller over seeded indexers; writes go to a fake
// clientset of the virtual cluster, whose actions the tests assert on.
type fixture struct {
	t                *testing.T
	client           *kubefake.Clientset
	recorder         *record.FakeRecorder
	physicalCSINodes cache.Indexer
	virtualCSINodes  cache.Indexer
	virtualNodes     cache.Indexer
	c                *Controller
}

// newFixture seeds physical CSINodes (those named like a physical node),
// virtual CSINodes and virtual nodes.
func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	var virtualCSINodes []runtime.Object
	for _, obj := range objects {
		if csiNode, ok := obj.(*storagev1.CSINode); ok && csiNode.Name != physicalName {
			virtualCSINodes = append(virtualCSINodes, obj)
		}
	}
	f := &fixture{t: t, client: kubefake.NewClientset(virtualCSINodes...), recorder: record.NewFakeRecorder(10)}
	virtual := kubeinformers.NewSharedInformerFactory(f.client, 0)
	physical := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	c, err := New(Options{
		ClusterID:        testClusterID,
		VirtualClient:    f.client.StorageV1(),
		PhysicalCSINodes: physical.Storage().V1().CSINodes(),
		VirtualCSINodes:  virtual.Storage().V1().CSINodes(),
		VirtualNodes:     virtual.Core().V1().Nodes(),
		Recorder:         f.recorder,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.physicalCSINodes = physical.Storage().V1().CSINodes().Informer().GetIndexer()
	f.virtualCSINodes = virtual.Storage().V1().CSINodes().Informer().GetIndexer()
	f.virtualNodes = virtual.Core().V1().Nodes().Informer().GetIndexer()
	for _, obj := range objects {
		indexer := f.virtualNodes
		if csiNode, ok := obj.(*storagev1.CSINode); ok {
			indexer = f.virtualCSINodes
			if csiNode.Name == physicalName {
				indexer = f.physicalCSINodes
			}
		}
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// reconcile runs one pass and returns the writes it made.
func (f *fixture) reconcile() ([]clienttesting.Action, error) {
	f.t.Helper()
	f.client.ClearActions()
	_, ctx := ktesting.NewTestContext(f.t)
	result, err := f.c.reconcile(ctx, physicalName)
	if result != (controller.Result{}) {
		f.t.Errorf("result %+v, want none: CSINodes have no timers", result)
	}
	var writes []clienttesting.Action
	for _, a := range f.client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			writes = append(writes, a)
		}
	}
	return writes, err
}

// syncCache copies the virtual CSINodes of the fake cluster into the
// lister, as the informer would.
func (f *fixture) syncCache() {
	f.t.Helper()
	list, err := f.client.StorageV1().CSINodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	if err := f.virtualCSINodes.Replace(items, ""); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) mirror() *storagev1.CSINode {
	f.t.Helper()
	csiNode, err := f.client.StorageV1().CSINodes().Get(context.Background(), virtualName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return csiNode
}

// expectNoSecondWrite syncs the cache and checks that one more pass writes
// nothing.
func (f *fixture) expectNoSecondWrite() {
	f.t.Helper()
	f.syncCache()
	if writes, err := f.reconcile(); err != nil || len(writes) != 0 {
		f.t.Fatalf("second pass: err %v, writes %v; want none", err, writes)
	}
}

func virtualNode() *corev1.Node {
	return fixtures.VirtualNode(virtualName, testClusterID, physicalName, fixtures.WithUID("node-uid"))
}

func driver(name, nodeID string, count int32, topologyKeys ...string) storagev1.CSINodeDriver {
	d := storagev1.CSINodeDriver{Name: name, NodeID: nodeID, TopologyKeys: topologyKeys}
	if count > 0 {
		d.Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(count)}
	}
	return d
}

func physicalCSINode(drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: physicalName, UID: "physical-uid", Labels: map[string]string{"physical": "label"}},
		Spec:       storagev1.CSINodeSpec{Drivers: drivers},
	}
}

// ourMirror is the virtual CSINode this controller writes for drivers.
func ourMirror(drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: virtualName, UID: "mirror-uid", ResourceVersion: "1",
			Labels: map[string]string{
				kubeoceanv1alpha1.LabelManagedBy:        kubeoceanv1alpha1.ManagedByKubeocean,
				kubeoceanv1alpha1.LabelClusterID:        testClusterID,
				kubeoceanv1alpha1.LabelPhysicalNodeName: physicalName,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: virtualName, UID: "node-uid"}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: drivers},
	}
}

func foreignCSINode() *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{Name: virtualName, UID: "foreign-uid"},
		Spec:       storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{driver("kubelet.csi", "x", 0)}},
	}
}

func TestCreatesMirror(t *testing.T) {
	drivers := []storagev1.CSINodeDriver{
		driver("ebs.csi.aws.com", "i-123", 25, "topology.ebs.csi.aws.com/zone"),
		driver("nfs.csi.k8s.io", "worker-1", 0),
	}
	f := newFixture(t, virtualNode(), physicalCSINode(drivers...))

	writes, err := f.reconcile()
	if err != nil || len(writes) != 1 || writes[0].GetVerb() != "create" {
		t.Fatalf("err %v, writes %v; want one create", err, writes)
	}
	got := f.mirror()
	want := ourMirror(drivers...)
	if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || !equality.Semantic.DeepEqual(got.Labels, want.Labels) ||
		!equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) {
		t.Fatalf("mirror = %+v\nwant %+v", got, want)
	}
	f.expectNoSecondWrite()
}

func TestUpdatesMirror(t *testing.T) {
	existing := ourMirror(driver("a.csi", "n1", 10), driver("gone.csi", "n1", 0))
	existing.Labels["user"] = "kept"
	existing.OwnerReferences[0].UID = "uid-of-an-earlier-node"
	f := newFixture(t, virtualNode(), existing, physicalCSINode(driver("a.csi", "n1", 20), driver("new.csi", "n1", 0)))

	writes, err := f.reconcile()
	if err != nil || len(writes) != 1 || writes[0].GetVerb() != "update" {
		t.Fatalf("err %v, writes %v; want one update", err, writes)
	}
	got := f.mirror()
	wantDrivers := []storagev1.CSINodeDriver{driver("a.csi", "n1", 20), driver("new.csi", "n1", 0)}
	if !equality.Semantic.DeepEqual(got.Spec.Drivers, wantDrivers) {
		t.Errorf("drivers = %+v, want %+v", got.Spec.Drivers, wantDrivers)
	}
	if got.Labels["user"] != "kept" || got.OwnerReferences[0].UID != "node-uid" {
		t.Errorf("labels %v, owner references %+v", got.Labels, got.OwnerReferences)
	}
	f.expectNoSecondWrite()
}

func TestReplacesImmutableDriverInTwoSteps(t *testing.T) {
	f := newFixture(t, virtualNode(), ourMirror(driver("a.csi", "old-id", 0), driver("b.csi", "n1", 0)),
		physicalCSINode(driver("a.csi", "new-id", 0), driver("b.csi", "n1", 0)))

	if writes, err := f.reconcile(); err != nil || len(writes) != 1 {
		t.Fatalf("first step: err %v, writes %v; want one update", err, writes)
	}
	if got := f.mirror().Spec.Drivers; !equality.Semantic.DeepEqual(got, []storagev1.CSINodeDriver{driver("b.csi", "n1", 0)}) {
		t.Fatalf("first step left drivers %+v, want only b.csi", got)
	}
	f.syncCache()
	if writes, err := f.reconcile(); err != nil || len(writes) != 1 {
		t.Fatalf("second step: err %v, writes %v; want one update", err, writes)
	}
	want := []storagev1.CSINodeDriver{driver("a.csi", "new-id", 0), driver("b.csi", "n1", 0)}
	if got := f.mirror().Spec.Drivers; !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("second step left drivers %+v, want %+v", got, want)
	}
	f.expectNoSecondWrite()
}

func TestFallsBackWhenAllocatableIsImmutable(t *testing.T) {
	f := newFixture(t, virtualNode(), ourMirror(driver("a.csi", "n1", 10)), physicalCSINode(driver("a.csi", "n1", 20)))
	// An apiserver before 1.35 rejects allocatable changes in place.
	f.client.PrependReactor("update", "csinodes", func(action clienttesting.Action) (bool, runtime.Object, error) {
		csiNode := action.(clienttesting.UpdateAction).GetObject().(*storagev1.CSINode)
		if len(csiNode.Spec.Drivers) > 0 && *csiNode.Spec.Drivers[0].Allocatable.Count == 20 {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "storage.k8s.io", Kind: "CSINode"}, csiNode.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "drivers"), nil, "field is immutable")})
		}
		return false, nil, nil
	})

	writes, err := f.reconcile()
	if err != nil || len(writes) != 2 {
		t.Fatalf("err %v, writes %v; want the rejected update and the fallback", err, writes)
	}
	if got := f.mirror().Spec.Drivers; len(got) != 0 {
		t.Fatalf("fallback left drivers %+v, want none until the next pass", got)
	}
}

func TestDeletesMirror(t *testing.T) {
	otherBinding := virtualNode()
	otherBinding.Labels[kubeoceanv1alpha1.LabelClusterID] = "other"
	drivers := driver("a.csi", "n1", 0)
	for name, objects := range map[string][]runtime.Object{
		"virtual node gone":          {physicalCSINode(drivers)},
		"physical CSINode gone":      {virtualNode()},
		"node of another binding":    {otherBinding, physicalCSINode(drivers)},
		"both gone":                  nil,
		"node names another machine": {relabelled(virtualNode(), "worker-2"), physicalCSINode(drivers)},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, append(objects, ourMirror(drivers))...)
			writes, err := f.reconcile()
			if err != nil || len(writes) != 1 {
				t.Fatalf("err %v, writes %v; want one delete", err, writes)
			}
			del, ok := writes[0].(clienttesting.DeleteActionImpl)
			if !ok || del.GetName() != virtualName || del.DeleteOptions.Preconditions == nil ||
				*del.DeleteOptions.Preconditions.UID != "mirror-uid" {
				t.Fatalf("write %+v is not a delete of %s with a UID precondition", writes[0], virtualName)
			}
		})
	}
}

func relabelled(node *corev1.Node, physical string) *corev1.Node {
	node.Labels[kubeoceanv1alpha1.LabelPhysicalNodeName] = physical
	return node
}

func TestForeignCSINodeIsUntouched(t *testing.T) {
	expectConflictEvent := func(t *testing.T, f *fixture) {
		t.Helper()
		select {
		case e := <-f.recorder.Events:
			if !strings.Contains(e, kubeoceanv1alpha1.ReasonCSINodeConflict) {
				t.Errorf("event %q, want reason %s", e, kubeoceanv1alpha1.ReasonCSINodeConflict)
			}
		default:
			t.Error("no event recorded")
		}
	}
	t.Run("in the cache", func(t *testing.T) {
		f := newFixture(t, virtualNode(), foreignCSINode(), physicalCSINode(driver("a.csi", "n1", 0)))
		writes, err := f.reconcile()
		if !controller.IsTerminal(err) || len(writes) != 0 {
			t.Fatalf("err %v, writes %v; want a terminal error and no write", err, writes)
		}
		expectConflictEvent(t, f)
	})
	t.Run("hidden by the scoped cache", func(t *testing.T) {
		f := newFixture(t, virtualNode(), physicalCSINode(driver("a.csi", "n1", 0)))
		if err := f.client.Tracker().Add(foreignCSINode()); err != nil {
			t.Fatal(err)
		}
		writes, err := f.reconcile()
		if !controller.IsTerminal(err) || len(writes) != 1 || writes[0].GetVerb() != "create" {
			t.Fatalf("err %v, writes %v; want a terminal error after the rejected create", err, writes)
		}
		expectConflictEvent(t, f)
		if got := f.mirror(); got.UID != "foreign-uid" || got.Labels != nil {
			t.Errorf("the foreign CSINode was changed: %+v", got)
		}
	})
	t.Run("virtual node gone", func(t *testing.T) {
		f := newFixture(t, foreignCSINode(), physicalCSINode(driver("a.csi", "n1", 0)))
		if writes, err := f.reconcile(); err != nil || len(writes) != 0 {
			t.Fatalf("err %v, writes %v; want none", err, writes)
		}
	})
}

func TestStepTowards(t *testing.T) {
	a, b := driver("a", "n1", 5, "zone"), driver("b", "n1", 0)
	tests := []struct {
		name               string
		current, desired   []storagev1.CSINodeDriver
		allocatableMutable bool
		want               []storagev1.CSINodeDriver
		wantOK             bool
	}{
		{name: "from nothing", desired: []storagev1.CSINodeDriver{a, b}, want: []storagev1.CSINodeDriver{a, b}, wantOK: true},
		{name: "drivers removed", current: []storagev1.CSINodeDriver{a, b}, desired: []storagev1.CSINodeDriver{b}, want: []storagev1.CSINodeDriver{b}, wantOK: true},
		{name: "node ID changed", current: []storagev1.CSINodeDriver{driver("a", "n0", 5, "zone"), b}, desired: []storagev1.CSINodeDriver{a, b}, want: []storagev1.CSINodeDriver{b}},
		{name: "topology keys changed", current: []storagev1.CSINodeDriver{driver("a", "n1", 5, "region")}, desired: []storagev1.CSINodeDriver{a}},
		{name: "count changed, mutable", current: []storagev1.CSINodeDriver{driver("a", "n1", 9, "zone")}, desired: []storagev1.CSINodeDriver{a}, allocatableMutable: true, want: []storagev1.CSINodeDriver{a}, wantOK: true},
		{name: "count changed, immutable", current: []storagev1.CSINodeDriver{driver("a", "n1", 9, "zone")}, desired: []storagev1.CSINodeDriver{a}},
		{name: "count unchanged, immutable", current: []storagev1.CSINodeDriver{a}, desired: []storagev1.CSINodeDriver{a}, want: []storagev1.CSINodeDriver{a}, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := stepTowards(tt.current, tt.desired, tt.allocatableMutable)
			if ok != tt.wantOK || !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("stepTowards = %+v, %v; want %+v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
