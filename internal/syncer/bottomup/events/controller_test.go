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
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestOnlyTheBindingsPodsAndNodesAreKept(t *testing.T) {
	f := newFixture(t, Limits{})
	nodeEvent := func(name string) *corev1.Event {
		return &corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: name, UID: "x"}, Reason: "NodeNotReady"}
	}
	tests := []struct {
		name   string
		event  *corev1.Event
		kept   bool
		filter func(*corev1.Event) bool
	}{
		{"the binding's pod", kubeletEvent("e", "Failed", "m", 1, started), true, f.c.keepPodEvent},
		{"a pod of the same name, replaced (another UID)", withInvolved(func(o *corev1.ObjectReference) { o.UID = "old" }), false, f.c.keepPodEvent},
		{"a pod the binding does not have", withInvolved(func(o *corev1.ObjectReference) { o.Name = "someone-else" }), false, f.c.keepPodEvent},
		{"a forged event naming the virtual pod", withInvolved(func(o *corev1.ObjectReference) { o.Name, o.Namespace, o.UID = virtualName, virtualNS, virtualUID }), false, f.c.keepPodEvent},
		{"an event the syncer reported", withSource("kubeocean-syncer"), false, f.c.keepPodEvent},
		{"a lent node", nodeEvent(physicalNode), true, f.c.keepNodeEvent},
		{"a node not lent", nodeEvent("worker-z"), false, f.c.keepNodeEvent},
	}
	for _, tt := range tests {
		if got := tt.filter(tt.event); got != tt.kept {
			t.Errorf("%s: kept %v, want %v", tt.name, got, tt.kept)
		}
	}
}

func TestTwinIsProvenByThePhysicalPodsRecord(t *testing.T) {
	for name, mutate := range map[string]func(physical, virtual *corev1.Pod){
		"no binding identity":          func(p, _ *corev1.Pod) { delete(p.Labels, kubeoceanv1alpha1.LabelBindingUID) },
		"another binding's identity":   func(p, _ *corev1.Pod) { p.Labels[kubeoceanv1alpha1.LabelBindingUID] = "other" },
		"records another virtual UID":  func(p, _ *corev1.Pod) { p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "other" },
		"records no virtual pod":       func(p, _ *corev1.Pod) { p.Annotations = nil },
		"the virtual pod was replaced": func(_, v *corev1.Pod) { v.UID = "new" },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, Limits{})
			p, v := physicalPod(), virtualPod()
			mutate(p, v)
			mustAdd(t, f.c.podEvents.GetIndexer().Add(kubeletEvent("e", "Failed", "m", 1, started)))
			mustAdd(t, podsIndexer(f, false).Update(p))
			mustAdd(t, podsIndexer(f, true).Update(v))
			if _, ok := f.c.podTarget(kubeletEvent("e", "Failed", "m", 1, started)); ok {
				t.Error("the event's pod was taken for the virtual pod's twin")
			}
			f.observe(t, kubeletEvent("e", "Failed", "m", 1, started))
			if w := f.writes(); len(w) != 0 {
				t.Errorf("recorded on an unproven twin: %v", w)
			}
		})
	}
}

func TestRecordsOnTheVirtualPodAndCounts(t *testing.T) {
	f := newFixture(t, Limits{})
	e := kubeletEvent("e1", "Failed", `Failed to pull image "nope": pod `+mountNS+"/"+physicalName+" on "+physicalNode, 1, started)
	f.observe(t, e)
	got := f.virtualEvents(t, virtualNS)
	if len(got) != 1 {
		t.Fatalf("%d virtual events, want 1", len(got))
	}
	v := got[0]
	if v.Count != 1 || v.Reason != "Failed" || v.Type != corev1.EventTypeWarning || v.InvolvedObject.UID != virtualUID ||
		v.Message != `Failed to pull image "nope": pod team-a/web on `+virtualNode || v.Source.Component != "kubeocean-syncer/kubelet" {
		t.Fatalf("virtual event %+v", v)
	}
	// The kubelet counts the same event again (a patch of its count), and
	// another object with the same message comes: one virtual event.
	e = e.DeepCopy()
	e.Count, e.ResourceVersion = 9, "2"
	f.observe(t, e)
	f.observe(t, kubeletEvent("e2", "Failed", e.Message, 1, started.Add(time.Second)))
	got = f.virtualEvents(t, virtualNS)
	if len(got) != 1 || got[0].Count != 10 {
		t.Fatalf("virtual events %d, count %d; want one of count 10", len(got), got[0].Count)
	}
	writes := len(f.writes())
	f.observe(t, e)
	if len(f.writes()) != writes {
		t.Error("a reconcile with nothing new wrote again")
	}
}

func TestRestartReplaysNothing(t *testing.T) {
	first := newFixture(t, Limits{})
	e := kubeletEvent("e1", "Failed", "m", 4, started)
	first.observe(t, e)
	recorded := first.virtualEvents(t, virtualNS)

	// A new syncer finds the physical event and the virtual event it made.
	second := newFixture(t, Limits{}, &recorded[0])
	second.observe(t, e)
	second.observe(t, e) // its retry, once it has read the event
	if got := second.virtualEvents(t, virtualNS); len(got) != 1 || got[0].Count != 4 || len(second.patches()) != 0 {
		t.Fatalf("the restarted controller changed the virtual events: %+v, patches %v", got, second.patches())
	}
	e = e.DeepCopy()
	e.Count = 5
	second.observe(t, e)
	got := second.virtualEvents(t, virtualNS)
	if len(second.patches()) != 1 || len(got) != 1 || got[0].Count != 5 {
		t.Errorf("after one more occurrence: %d patches, %d events of count %d; want one patch, count 5", len(second.patches()), len(got), got[0].Count)
	}
}

func TestEventsFromBeforeTheStartAreNotRecordedAnew(t *testing.T) {
	f := newFixture(t, Limits{})
	f.observe(t, kubeletEvent("old", "Failed", "m", 3, started.Add(-DefaultStartMargin-time.Second)))
	if w := f.writes(); len(w) != 0 {
		t.Fatalf("an event older than the start margin, with no virtual event, was recorded: %v", w)
	}
	f.observe(t, kubeletEvent("recent", "Failed", "m2", 1, started.Add(-DefaultStartMargin+time.Second)))
	if w := f.writes(); len(w) != 1 {
		t.Fatalf("a recent event: %d writes, want 1", len(w))
	}
}

func TestNodeEventsGoToTheVirtualNode(t *testing.T) {
	f := newFixture(t, Limits{})
	e := &corev1.Event{
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: physicalNode, UID: physicalNode},
		Type:           corev1.EventTypeNormal, Reason: "NodeNotReady", Message: "Node " + physicalNode + " status is now: NodeNotReady",
		Source: corev1.EventSource{Component: "kubelet", Host: physicalNode}, Count: 1,
	}
	e.Namespace, e.Name, e.LastTimestamp.Time = NodeEventNamespace, "n1", started
	f.observe(t, e)
	got := f.virtualEvents(t, "default")
	if len(got) != 1 || got[0].InvolvedObject.Name != virtualNode || got[0].InvolvedObject.UID != "vnode-uid" ||
		got[0].Message != "Node "+virtualNode+" status is now: NodeNotReady" || got[0].Source.Host != virtualNode {
		t.Fatalf("virtual node events %+v", got)
	}
}

func TestRateLimitFoldsRepeatsAndDropsNewEvents(t *testing.T) {
	f := newFixture(t, Limits{ObjectQPS: 1, ObjectBurst: 2, BindingQPS: 100, BindingBurst: 100})
	e := kubeletEvent("loop", "BackOff", "Back-off restarting failed container", 1, started)
	f.observe(t, e)
	for count := int32(2); count <= 1000; count++ {
		e = e.DeepCopy()
		e.Count = count
		f.observe(t, e)
	}
	if w := len(f.writes()); w != 2 {
		t.Fatalf("1,000 occurrences in no time: %d writes, want the burst of 2", w)
	}
	k := key{aggregate: aggregateOf(e)}
	f.clock.Step(time.Second)
	result, err := f.c.reconcile(t.Context(), k)
	if err != nil || len(f.writes()) != 3 || result.RequeueAfter != 0 {
		t.Fatalf("a second later: %d writes (result %+v, %v), want a third", len(f.writes()), result, err)
	}
	if got := f.virtualEvents(t, virtualNS)[0].Count; got != 1000 {
		t.Errorf("count %d after the wait, want all 1,000 folded in", got)
	}
	// A new event while the bucket is empty is dropped, and counted.
	f.observe(t, kubeletEvent("new", "Unhealthy", "Liveness probe failed", 3, started))
	if len(f.writes()) != 3 {
		t.Error("a new event was written without a token")
	}
	dropped := testutil.ToFloat64(f.c.dropped.WithLabelValues("b", kubeoceanv1alpha1.EventDropObjectRateLimit))
	if dropped != 3 {
		t.Errorf("dropped %v occurrences, want 3", dropped)
	}
	if n, err := testutil.GatherAndCount(f.registry, kubeoceanv1alpha1.MetricEventsDropped); err != nil || n != 1 {
		t.Errorf("%s not registered: %d, %v", kubeoceanv1alpha1.MetricEventsDropped, n, err)
	}
}

func withInvolved(mutate func(*corev1.ObjectReference)) *corev1.Event {
	e := kubeletEvent("e", "Failed", "m", 1, started)
	mutate(&e.InvolvedObject)
	if e.InvolvedObject.Namespace != mountNS && !strings.HasPrefix(e.InvolvedObject.Namespace, "kubeocean") {
		e.Namespace = e.InvolvedObject.Namespace
	}
	return e
}

func withSource(component string) *corev1.Event {
	e := kubeletEvent("e", "Failed", "m", 1, started)
	e.Source.Component = component
	return e
}
