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

package dependentstest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanlisters "github.com/kubeocean/kubeocean/generated/listers/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/allowances"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
)

// The binding the Env stands for.
const (
	ClusterID      = "c1"
	BindingUID     = types.UID("binding-c1")
	MountNamespace = "mount"
	// Node is a virtual node of the binding; pods on it count.
	Node = "vnode-c1-worker"
)

// Owner is the identity of the binding's physical objects.
var Owner = ownership.Owner{ClusterID: ClusterID, BindingUID: BindingUID}

// Env is a Syncer over fake clusters.
type Env struct {
	t                   *testing.T
	Virtual, Physical   *kubefake.Clientset
	VirtualInformers    kubeinformers.SharedInformerFactory
	PhysicalInformers   kubeinformers.SharedInformerFactory
	Recorder            *record.FakeRecorder
	Clock               *clocktesting.FakeClock
	Syncer              *dependents.Syncer
	writesMu            sync.Mutex
	writes              []string
	virtualPodsAndNodes []runtime.Object
}

// Binding names the binding's ClusterBinding, which its
// ResourceLeasingPolicies name.
const Binding = "binding-c1"

// DefaultAllowances are what the binding's policy allows in an Env made by
// New: the CSI driver of the volumes built here.
var DefaultAllowances = kubeoceanv1alpha1.WorkloadAllowances{CSIDrivers: []string{CSIDriver}}

// Allowing is the allowances of one policy of Binding that allows allowed;
// nil allows nothing beyond the defaults.
func Allowing(allowed *kubeoceanv1alpha1.WorkloadAllowances) *allowances.Source {
	policies := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	_ = policies.Add(&kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: Binding},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: Binding, Allowances: allowed},
	})
	return allowances.NewSource(kubeoceanlisters.NewResourceLeasingPolicyLister(policies), Binding, MountNamespace)
}

// New builds an Env whose clusters hold virtual and physical objects; the
// caches are filled from them (SyncCaches). Virtual pods and nodes go to
// the pod and node caches only; the binding's node Node is always there.
// The binding's policy allows DefaultAllowances.
func New(t *testing.T, virtual, physical []runtime.Object) *Env {
	t.Helper()
	return NewAllowing(t, virtual, physical, Allowing(&DefaultAllowances))
}

// NewAllowing is New with the binding's allowances read from allowed.
func NewAllowing(t *testing.T, virtual, physical []runtime.Object, allowed *allowances.Source) *Env {
	t.Helper()
	return newEnv(t, virtual, physical, allowed, nil)
}

// NewWithPredecessors is New with the binding's earlier bindings proven by
// predecessors.
func NewWithPredecessors(t *testing.T, virtual, physical []runtime.Object, predecessors *ownership.Predecessors) *Env {
	t.Helper()
	return newEnv(t, virtual, physical, Allowing(&DefaultAllowances), predecessors)
}

func newEnv(t *testing.T, virtual, physical []runtime.Object, allowed *allowances.Source, predecessors *ownership.Predecessors) *Env {
	t.Helper()
	e := &Env{
		t: t, Recorder: record.NewFakeRecorder(20),
		Clock: clocktesting.NewFakeClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	var virtualObjects []runtime.Object
	e.virtualPodsAndNodes = []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: Node, Labels: map[string]string{kubeoceanv1alpha1.LabelClusterID: ClusterID},
	}}}
	for _, obj := range virtual {
		switch obj.(type) {
		case *corev1.Pod, *corev1.Node:
			e.virtualPodsAndNodes = append(e.virtualPodsAndNodes, obj)
		default:
			virtualObjects = append(virtualObjects, obj)
		}
	}
	e.Virtual = kubefake.NewClientset(virtualObjects...)
	e.Physical = kubefake.NewClientset(physical...)
	e.Virtual.PrependReactor("*", "*", e.logWrite("virtual"))
	e.Physical.PrependReactor("*", "*", e.logWrite("physical"))
	e.VirtualInformers = kubeinformers.NewSharedInformerFactory(e.Virtual, 0)
	e.PhysicalInformers = kubeinformers.NewSharedInformerFactory(e.Physical, 0)
	v, p := e.VirtualInformers.Core().V1(), e.PhysicalInformers.Core().V1()
	s, err := dependents.New(dependents.Options{
		ClusterID: ClusterID, BindingUID: BindingUID, MountNamespace: MountNamespace,
		VirtualClient: e.Virtual, PhysicalClient: e.Physical,
		VirtualConfigMaps: v.ConfigMaps().Lister(), VirtualSecrets: v.Secrets().Lister(),
		VirtualPVCs: v.PersistentVolumeClaims().Lister(), VirtualPVs: v.PersistentVolumes().Lister(),
		PhysicalConfigMaps: p.ConfigMaps().Lister(), PhysicalSecrets: p.Secrets().Lister(),
		PhysicalPVCs: p.PersistentVolumeClaims().Lister(), PhysicalPVs: p.PersistentVolumes().Lister(),
		Allowances: allowed, Recorder: e.Recorder, Clock: e.Clock, Predecessors: predecessors,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.Syncer = s
	e.SyncCaches()
	return e
}

// logWrite records every request but reads, as "<cluster> <verb>
// <resource> <namespace/name>", and lets the fake handle it.
func (e *Env) logWrite(cluster string) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		verb := action.GetVerb()
		if verb == "get" || verb == "list" || verb == "watch" {
			return false, nil, nil
		}
		name := ""
		switch a := action.(type) {
		case clienttesting.CreateAction:
			if m, err := meta.Accessor(a.GetObject()); err == nil {
				name = m.GetName()
			}
		case clienttesting.UpdateAction:
			if m, err := meta.Accessor(a.GetObject()); err == nil {
				name = m.GetName()
			}
		case clienttesting.DeleteAction:
			name = a.GetName()
		}
		e.writesMu.Lock()
		defer e.writesMu.Unlock()
		e.writes = append(e.writes, strings.TrimSpace(fmt.Sprintf("%s %s %s %s", cluster, verb, action.GetResource().Resource,
			cache.ObjectName{Namespace: action.GetNamespace(), Name: name}.String())))
		return false, nil, nil
	}
}

// Writes returns the writes made since the last call, in order.
func (e *Env) Writes() []string {
	e.writesMu.Lock()
	defer e.writesMu.Unlock()
	w := e.writes
	e.writes = nil
	return w
}

// ExpectWrites checks the writes made since the last check.
func (e *Env) ExpectWrites(want ...string) {
	e.t.Helper()
	if got := e.Writes(); !slices.Equal(got, want) {
		e.t.Errorf("writes:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// Context is a context with the test's logger.
func (e *Env) Context() context.Context {
	_, ctx := ktesting.NewTestContext(e.t)
	return ctx
}

// SyncCaches fills the caches from the fake clusters the way the production
// scopes would: virtual objects marked for the binding, physical objects
// labelled managed-by (in the mount namespace, but for PVs), and the
// virtual pods and nodes given to New or added since. The physical caches
// are wider than production's, which select the binding's identity: other
// bindings' copies are in them, so tests show the Syncer leaves those alone
// by itself.
func (e *Env) SyncCaches() {
	e.t.Helper()
	v, p := e.VirtualInformers.Core().V1(), e.PhysicalInformers.Core().V1()
	marked := func(obj metav1.Object) bool {
		_, ok := obj.GetLabels()[kubeoceanv1alpha1.SyncedByLabel(ClusterID)]
		return ok
	}
	managed := func(namespaced bool) func(metav1.Object) bool {
		return func(obj metav1.Object) bool {
			return obj.GetLabels()[kubeoceanv1alpha1.LabelManagedBy] == kubeoceanv1alpha1.ManagedByKubeocean &&
				(!namespaced || obj.GetNamespace() == MountNamespace)
		}
	}
	for _, k := range []struct {
		kind     string
		resource string
		virtual  cache.SharedIndexInformer
		physical cache.SharedIndexInformer
	}{
		{"ConfigMap", "configmaps", v.ConfigMaps().Informer(), p.ConfigMaps().Informer()},
		{"Secret", "secrets", v.Secrets().Informer(), p.Secrets().Informer()},
		{"PersistentVolumeClaim", "persistentvolumeclaims", v.PersistentVolumeClaims().Informer(), p.PersistentVolumeClaims().Informer()},
		{"PersistentVolume", "persistentvolumes", v.PersistentVolumes().Informer(), p.PersistentVolumes().Informer()},
	} {
		e.fill(e.Virtual, k.kind, k.resource, k.virtual, marked)
		// The informers would deliver an event of every copy that came,
		// changed or went.
		for _, obj := range k.physical.GetStore().List() {
			e.Syncer.CopySeen(obj)
		}
		e.fill(e.Physical, k.kind, k.resource, k.physical, managed(k.kind != "PersistentVolume"))
		for _, obj := range k.physical.GetStore().List() {
			e.Syncer.CopySeen(obj)
		}
	}
	for _, obj := range e.virtualPodsAndNodes {
		informer := v.Nodes().Informer()
		if _, ok := obj.(*corev1.Pod); ok {
			informer = v.Pods().Informer()
		}
		if err := informer.GetIndexer().Update(obj); err != nil {
			e.t.Fatal(err)
		}
	}
}

// AddPod puts a virtual pod in the pod cache.
func (e *Env) AddPod(pod *corev1.Pod) {
	e.t.Helper()
	e.virtualPodsAndNodes = append(e.virtualPodsAndNodes, pod)
	if err := e.VirtualInformers.Core().V1().Pods().Informer().GetIndexer().Update(pod); err != nil {
		e.t.Fatal(err)
	}
}

// DeletePod removes a virtual pod from the pod cache.
func (e *Env) DeletePod(pod *corev1.Pod) {
	e.t.Helper()
	for i, obj := range e.virtualPodsAndNodes {
		if p, ok := obj.(*corev1.Pod); ok && p.Namespace == pod.Namespace && p.Name == pod.Name {
			e.virtualPodsAndNodes = append(e.virtualPodsAndNodes[:i], e.virtualPodsAndNodes[i+1:]...)
			break
		}
	}
	if err := e.VirtualInformers.Core().V1().Pods().Informer().GetIndexer().Delete(pod); err != nil {
		e.t.Fatal(err)
	}
}

// fill replaces the content of informer's cache by the objects of kind in
// client that keep selects.
func (e *Env) fill(client *kubefake.Clientset, kind, resource string, informer cache.SharedIndexInformer, keep func(metav1.Object) bool) {
	e.t.Helper()
	list, err := client.Tracker().List(corev1.SchemeGroupVersion.WithResource(resource), corev1.SchemeGroupVersion.WithKind(kind), "")
	if err != nil {
		e.t.Fatal(err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		e.t.Fatal(err)
	}
	var objs []any
	for _, item := range items {
		if obj, ok := item.(metav1.Object); ok && keep(obj) {
			objs = append(objs, item)
		}
	}
	if err := informer.GetIndexer().Replace(objs, ""); err != nil {
		e.t.Fatal(err)
	}
}
