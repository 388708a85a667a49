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
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const testClusterID = "c1"

var (
	testStart   = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	virtualName = kubeoceanv1alpha1.VirtualNodeName(testClusterID, "worker-1")
)

// fixture is a controller over seeded indexers; writes go to a fake
// clientset, whose actions the tests assert on.
type fixture struct {
	t             *testing.T
	client        *kubefake.Clientset
	clock         *clocktesting.FakeClock
	virtualNodes  cache.Indexer
	leases        cache.Indexer
	physicalNodes cache.Indexer
	c             *Controller
	// physicalDown is what the physical apiserver prober says.
	physicalDown bool
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	var virtualObjects []runtime.Object
	for _, obj := range objects {
		if _, ok := obj.(*coordinationv1.Lease); ok {
			virtualObjects = append(virtualObjects, obj)
		}
	}
	f := &fixture{t: t, client: kubefake.NewClientset(virtualObjects...), clock: clocktesting.NewFakeClock(testStart)}
	virtual := kubeinformers.NewSharedInformerFactory(f.client, 0)
	physical := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	c, err := New(Options{
		ClusterID:       testClusterID,
		Client:          f.client.CoordinationV1(),
		VirtualNodes:    virtual.Core().V1().Nodes(),
		Leases:          virtual.Coordination().V1().Leases(),
		PhysicalNodes:   physical.Core().V1().Nodes(),
		Clock:           f.clock,
		PhysicalAnswers: func() bool { return !f.physicalDown },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.virtualNodes = virtual.Core().V1().Nodes().Informer().GetIndexer()
	f.leases = virtual.Coordination().V1().Leases().Informer().GetIndexer()
	f.physicalNodes = physical.Core().V1().Nodes().Informer().GetIndexer()
	for _, obj := range objects {
		switch o := obj.(type) {
		case *coordinationv1.Lease:
			fixtures.MustAdd(f.t, f.leases, o)
		case *corev1.Node:
			if _, ours := o.Labels[kubeoceanv1alpha1.LabelClusterID]; ours {
				fixtures.MustAdd(f.t, f.virtualNodes, o)
			} else {
				fixtures.MustAdd(f.t, f.physicalNodes, o)
			}
		}
	}
	return f
}

// reconcile runs one pass and returns its result and the writes it made.
func (f *fixture) reconcile(name string) (controller.Result, []clienttesting.Action, error) {
	f.t.Helper()
	f.client.ClearActions()
	_, ctx := ktesting.NewTestContext(f.t)
	result, err := f.c.reconcile(ctx, name)
	return result, fixtures.Writes(f.client.Actions()), err
}

// syncCache copies the Leases of the fake cluster into the lister, as the
// informer would.
func (f *fixture) syncCache() {
	f.t.Helper()
	list, err := f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	items := make([]any, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, &list.Items[i])
	}
	if err := f.leases.Replace(items, ""); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) lease(name string) *coordinationv1.Lease {
	f.t.Helper()
	lease, err := f.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return lease
}

func virtualNode(name, physical string) *corev1.Node {
	return fixtures.VirtualNode(name, testClusterID, physical, fixtures.WithUID(types.UID("uid-"+name)))
}

func physicalNode(name string, ready corev1.ConditionStatus) *corev1.Node {
	return fixtures.Node(name, fixtures.WithReady(ready))
}

// ourLease is the Lease of virtualNode(name) renewed at renewTime.
func ourLease(name string, renewTime time.Time) *coordinationv1.Lease {
	rt := metav1.NewMicroTime(renewTime)
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: corev1.NamespaceNodeLease, Name: name, UID: "lease-uid", ResourceVersion: "1",
			Labels: map[string]string{
				kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean,
				kubeoceanv1alpha1.LabelClusterID: testClusterID,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: types.UID("uid-" + name)}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
			AcquireTime: &rt, RenewTime: &rt,
		},
	}
}

func foreignLease(name string) *coordinationv1.Lease {
	lease := ourLease(name, testStart.Add(-time.Hour))
	lease.Labels = nil
	lease.OwnerReferences = nil
	return lease
}
