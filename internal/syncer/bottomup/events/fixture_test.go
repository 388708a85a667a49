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

package events

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	testingclock "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

const (
	testClusterID = "c1"
	testBinding   = types.UID("binding-uid")
	mountNS       = "kubeocean-worker"
	virtualNS     = "team-a"
	virtualName   = "web"
	virtualUID    = types.UID("virtual-uid")
	physicalUID   = types.UID("physical-uid")
	physicalNode  = "worker-b"
)

var (
	physicalName = kubeoceanv1alpha1.PhysicalName(virtualNS, virtualName)
	virtualNode  = kubeoceanv1alpha1.VirtualNodeName(testClusterID, physicalNode)
	testOwner    = ownership.Owner{ClusterID: testClusterID, BindingUID: testBinding}
	started      = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
)

func physicalPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: physicalName, UID: physicalUID, Labels: testOwner.Stamp(nil),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtualNS,
				kubeoceanv1alpha1.AnnotationVirtualPodName:      virtualName,
				kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(virtualUID),
			},
		},
		Spec: corev1.PodSpec{NodeName: physicalNode},
	}
}

func virtualPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: virtualNS, Name: virtualName, UID: virtualUID},
		Spec:       corev1.PodSpec{NodeName: virtualNode},
	}
}

func lentNode() *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: virtualNode, UID: "vnode-uid",
		Labels: map[string]string{kubeoceanv1alpha1.LabelClusterID: testClusterID}, Annotations: map[string]string{}}}
	kubeoceanv1alpha1.SetPhysicalNodeName(n.Labels, n.Annotations, physicalNode)
	return n
}

// kubeletEvent is an event as the kubelet records it about the physical
// pod, count times, the last at `at`.
func kubeletEvent(name, reason, message string, count int32, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: mountNS, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: mountNS, Name: physicalName, UID: physicalUID,
			FieldPath: "spec.containers{app}"},
		Type: corev1.EventTypeWarning, Reason: reason, Message: message,
		Source:         corev1.EventSource{Component: "kubelet", Host: physicalNode},
		FirstTimestamp: metav1.NewTime(at.Add(-time.Second)), LastTimestamp: metav1.NewTime(at), Count: count,
	}
}

type fixture struct {
	c        *Controller
	virtual  *kubefake.Clientset
	clock    *testingclock.FakeClock
	registry *prometheus.Registry
	// pods and virtualPods are the seeded pod caches.
	pods, virtualPods cache.Indexer
}

func podsIndexer(f *fixture, virtual bool) cache.Indexer {
	if virtual {
		return f.virtualPods
	}
	return f.pods
}

// newFixture builds the controller on fake clusters whose caches hold the
// binding's pod, its virtual twin and the lent node; virtual holds the
// virtual cluster's objects (events of an earlier run).
func newFixture(t *testing.T, limits Limits, virtual ...*corev1.Event) *fixture {
	t.Helper()
	physicalClient := kubefake.NewClientset()
	var objs []runtime.Object
	for _, e := range virtual {
		objs = append(objs, e)
	}
	virtualClient := kubefake.NewClientset(objs...)
	physicalInformers := kubeinformers.NewSharedInformerFactory(physicalClient, 0)
	virtualInformers := kubeinformers.NewSharedInformerFactory(virtualClient, 0)
	pods, vpods, vnodes := physicalInformers.Core().V1().Pods(), virtualInformers.Core().V1().Pods(), virtualInformers.Core().V1().Nodes()
	mustAdd(t, pods.Informer().GetIndexer().Add(physicalPod()))
	mustAdd(t, vpods.Informer().GetIndexer().Add(virtualPod()))
	mustAdd(t, vnodes.Informer().GetIndexer().Add(lentNode()))
	clock := testingclock.NewFakeClock(started)
	registry := prometheus.NewRegistry()
	c, err := New(Options{
		BindingName: "b", ClusterID: testClusterID, BindingUID: testBinding, MountNamespace: mountNS, Component: "kubeocean-syncer",
		PhysicalClient: physicalClient.CoreV1(), VirtualClient: virtualClient.CoreV1(),
		PhysicalPods: pods, VirtualPods: vpods, VirtualNodes: vnodes,
		Limits: limits, Registry: registry, Clock: clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	virtualClient.ClearActions()
	return &fixture{c: c, virtual: virtualClient, clock: clock, registry: registry,
		pods: pods.Informer().GetIndexer(), virtualPods: vpods.Informer().GetIndexer()}
}

func mustAdd(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// observe puts physical events in the controller's cache, as its
// informer would once its filter kept them, and reconciles their
// aggregate.
func (f *fixture) observe(t *testing.T, events ...*corev1.Event) {
	t.Helper()
	for _, e := range events {
		indexer := f.c.podEvents.GetIndexer()
		if e.InvolvedObject.Kind == "Node" {
			indexer = f.c.nodeEvents.GetIndexer()
		}
		mustAdd(t, indexer.Update(e))
	}
	k := key{node: events[0].InvolvedObject.Kind == "Node", aggregate: aggregateOf(events[0])}
	if _, err := f.c.reconcile(t.Context(), k); err != nil {
		t.Fatal(err)
	}
}

// writes are the virtual event writes made so far.
func (f *fixture) writes() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.virtual.Actions() {
		if a.GetResource().Resource == "events" && (a.GetVerb() == "create" || a.GetVerb() == "patch") {
			out = append(out, a)
		}
	}
	return out
}

// patches are the virtual event patches made so far.
func (f *fixture) patches() []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range f.writes() {
		if a.GetVerb() == "patch" {
			out = append(out, a)
		}
	}
	return out
}

// virtualEvents lists the events in the virtual namespace.
func (f *fixture) virtualEvents(t *testing.T, namespace string) []corev1.Event {
	t.Helper()
	list, err := f.virtual.Tracker().List(corev1.SchemeGroupVersion.WithResource("events"), corev1.SchemeGroupVersion.WithKind("Event"), namespace)
	if err != nil {
		t.Fatal(err)
	}
	return list.(*corev1.EventList).Items
}
