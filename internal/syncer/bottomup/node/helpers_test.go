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

package node

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions"
	"github.com/kubeocean/kubeocean/internal/compact"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const (
	testBinding   = "worker-1"
	testClusterID = "cls-1"
	testMount     = "mount"
)

// testOwner is binding()'s identity, which the wiring's foreign-pod
// transform is built with.
var testOwner = ownership.Owner{ClusterID: testClusterID, BindingUID: "binding-uid"}

// Friday 2026-11-20 12:00 UTC.
var testNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// fixture is a controller over seeded listers and a fake virtual client.
type fixture struct {
	t        *testing.T
	c        *Controller
	virtual  *kubefake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder

	bindings, policies, physicalNodes, foreignPods, virtualNodes, virtualPods interface{ Add(any) error }
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	virtual := kubefake.NewClientset()
	versionNodes(virtual)
	physicalFactory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	virtualFactory := kubeinformers.NewSharedInformerFactory(virtual, 0)
	oceanPhysical := kubeoceaninformers.NewSharedInformerFactory(kubeoceanfake.NewClientset(), 0)
	oceanVirtual := kubeoceaninformers.NewSharedInformerFactory(kubeoceanfake.NewClientset(), 0)

	f := &fixture{t: t, virtual: virtual, clock: clocktesting.NewFakeClock(testNow), recorder: record.NewFakeRecorder(100)}
	opts := Options{
		BindingName: testBinding, ClusterID: testClusterID, MountNamespace: testMount,
		VirtualNodesClient: virtual.CoreV1(), VirtualPodsClient: virtual.CoreV1(),
		Bindings:      oceanVirtual.Kubeocean().V1alpha1().ClusterBindings(),
		Policies:      oceanPhysical.Kubeocean().V1alpha1().ResourceLeasingPolicies(),
		PhysicalNodes: physicalFactory.Core().V1().Nodes(),
		ForeignPods:   physicalFactory.Core().V1().Pods().Informer(),
		VirtualNodes:  virtualFactory.Core().V1().Nodes(),
		VirtualPods:   virtualFactory.Core().V1().Pods(),
		Recorder:      f.recorder,
		Metrics:       nil,
		Clock:         f.clock,
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Most tests are about what is written, not when: no pacing unless a
	// test sets it.
	c.writes.interval = 0
	f.c = c
	f.bindings = opts.Bindings.Informer().GetIndexer()
	f.policies = opts.Policies.Informer().GetIndexer()
	f.physicalNodes = opts.PhysicalNodes.Informer().GetIndexer()
	f.foreignPods = compactingStore{store: opts.ForeignPods.GetIndexer(), sums: c.foreignUsage}
	f.virtualNodes = opts.VirtualNodes.Informer().GetIndexer()
	f.virtualPods = opts.VirtualPods.Informer().GetIndexer()
	return f
}

// versionNodes makes the fake client give nodes a new resourceVersion on
// every write, as the API server does; the object tracker alone leaves it
// empty, and keeps it on patches.
func versionNodes(client *kubefake.Clientset) {
	var version int
	next := func() string { version++; return strconv.Itoa(version) }
	client.PrependReactor("*", "nodes", func(action k8stesting.Action) (bool, runtime.Object, error) {
		switch a := action.(type) {
		case k8stesting.PatchAction:
			obj, err := client.Tracker().Get(a.GetResource(), "", a.GetName())
			if err != nil {
				return true, nil, err
			}
			current, err := json.Marshal(obj)
			if err != nil {
				return true, nil, err
			}
			patched, err := strategicpatch.StrategicMergePatch(current, a.GetPatch(), corev1.Node{})
			if err != nil {
				return true, nil, err
			}
			node := &corev1.Node{}
			if err := json.Unmarshal(patched, node); err != nil {
				return true, nil, err
			}
			node.ResourceVersion = next()
			return true, node, client.Tracker().Update(a.GetResource(), node, "")
		case interface{ GetObject() runtime.Object }:
			if node, ok := a.GetObject().(*corev1.Node); ok {
				node.ResourceVersion = next()
			}
		}
		return false, nil, nil
	})
}

// compactingStore stores pods the way the foreign-pod informer's transform
// does, and feeds the change to the controller's sums as its event handler
// would.
type compactingStore struct {
	store cache.Indexer
	sums  *compact.UsageByNode
}

func (s compactingStore) Add(obj any) error {
	usage, err := compact.ForeignPod(testOwner)(obj)
	if err != nil {
		return err
	}
	old, _, err := s.store.Get(usage)
	if err != nil {
		return err
	}
	if err := s.store.Add(usage); err != nil {
		return err
	}
	previous, _ := old.(*compact.PodUsage)
	s.sums.Update(previous, usage.(*compact.PodUsage))
	return nil
}

// sync reconciles key and, like the informer would, feeds every node the
// fake client now holds back into the virtual node lister.
func (f *fixture) sync(key string) controller.Result {
	f.t.Helper()
	f.virtual.ClearActions()
	result, err := f.c.sync(context.Background(), key)
	if err != nil {
		f.t.Fatalf("sync(%s): %v", key, err)
	}
	f.refreshVirtualNodes()
	return result
}

func (f *fixture) refreshVirtualNodes() {
	nodes, err := f.virtual.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	store := f.virtualNodes.(interface {
		Replace([]any, string) error
	})
	var objs []any
	for i := range nodes.Items {
		objs = append(objs, &nodes.Items[i])
	}
	if err := store.Replace(objs, ""); err != nil {
		f.t.Fatal(err)
	}
}

// writes lists the verbs and resources of the client's write actions.
func (f *fixture) writes() []string { return fixtures.Verbs(fixtures.Writes(f.virtual.Actions())) }

func (f *fixture) virtualNode(name string) *corev1.Node {
	f.t.Helper()
	n, err := f.virtual.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

func binding() *kubeoceanv1alpha1.ClusterBinding {
	return &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: testBinding, UID: "binding-uid"},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID: testClusterID, MountNamespace: testMount,
			SecretRef: kubeoceanv1alpha1.SecretReference{Name: "kc", Namespace: "kubeocean-system"},
		},
	}
}

func policy(name string, created time.Time, mutate ...func(*kubeoceanv1alpha1.ResourceLeasingPolicy)) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	p := &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: testBinding},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func cpuPercent(percent int32) func(*kubeoceanv1alpha1.ResourceLeasingPolicy) {
	return func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.ResourceLimits = append(p.Spec.ResourceLimits, kubeoceanv1alpha1.ResourceLimit{Resource: corev1.ResourceCPU, Percent: ptr.To(percent)})
	}
}

func physicalNode(name string, labels map[string]string) *corev1.Node {
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name", Labels: labels},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: "batch", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.NewTime(testNow.Add(-time.Minute))}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.36.3", Architecture: "amd64", OperatingSystem: "linux"},
		},
	}
}

func foreignPod(name, node, cpu string, phase corev1.PodPhase) *corev1.Pod {
	return fixtures.Pod("apps", name, fixtures.WithNode(node), fixtures.WithPhase(phase), fixtures.WithContainers(corev1.Container{Name: "c",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}))
}
