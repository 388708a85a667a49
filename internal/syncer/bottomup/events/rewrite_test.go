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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRewriteHidesPhysicalNames(t *testing.T) {
	names := map[string]string{
		"web-abc":         "web",
		"mount-x/web-abc": "team-a/web",
		"mount-x":         "team-a",
		"node-1":          "vnode-c1-node-1",
		"":                "ignored",
	}
	tests := []struct{ in, want string }{
		{`Successfully assigned mount-x/web-abc to node-1`, `Successfully assigned team-a/web to vnode-c1-node-1`},
		{`pod "web-abc" in namespace "mount-x"`, `pod "web-abc"`[:0] + `pod "web" in namespace "team-a"`},
		// Part of a longer name: left alone.
		{`node-10 and web-abcd and xnode-1`, `node-10 and web-abcd and xnode-1`},
		// A sentence ends with a name.
		{`Back-off restarting failed container app in pod web-abc.`, `Back-off restarting failed container app in pod web.`},
		// The virtual node's name contains the physical one: replaced once.
		{`node-1 node-1`, `vnode-c1-node-1 vnode-c1-node-1`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := rewrite(tt.in, names); got != tt.want {
			t.Errorf("rewrite(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestAggregateIsTheEventLoggersKey(t *testing.T) {
	a := kubeletEvent("a", "Failed", "boom", 1, started)
	b := kubeletEvent("b", "Failed", "boom", 3, started.Add(time.Minute))
	if aggregateOf(a) != aggregateOf(b) {
		t.Error("two events of one object, reason and message are two aggregates")
	}
	for name, mutate := range map[string]func(*corev1.Event){
		"message":   func(e *corev1.Event) { e.Message = "other" },
		"reason":    func(e *corev1.Event) { e.Reason = "BackOff" },
		"type":      func(e *corev1.Event) { e.Type = corev1.EventTypeNormal },
		"pod UID":   func(e *corev1.Event) { e.InvolvedObject.UID = "other" },
		"component": func(e *corev1.Event) { e.Source.Component = "default-scheduler" },
		"container": func(e *corev1.Event) { e.InvolvedObject.FieldPath = "spec.containers{side}" },
	} {
		c := a.DeepCopy()
		mutate(c)
		if aggregateOf(c) == aggregateOf(a) {
			t.Errorf("another %s, same aggregate", name)
		}
	}
}

func TestOccurrencesOfBothAPIs(t *testing.T) {
	series := kubeletEvent("s", "Failed", "m", 0, started)
	series.Series = &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(started.Add(time.Hour))}
	for _, tt := range []struct {
		e    *corev1.Event
		want int32
	}{{kubeletEvent("a", "Failed", "m", 0, started), 1}, {kubeletEvent("b", "Failed", "m", 4, started), 4}, {series, 7}} {
		if got := occurrences(tt.e); got != tt.want {
			t.Errorf("occurrences(%s) = %d, want %d", tt.e.Name, got, tt.want)
		}
	}
	if !lastSeen(series).Equal(started.Add(time.Hour)) {
		t.Errorf("lastSeen ignores the series: %v", lastSeen(series))
	}
}

func TestVirtualEventSumsTheAggregate(t *testing.T) {
	target := target{ref: podRef("team-a", "web", "vuid"), names: map[string]string{physicalName: "web", physicalNode: virtualNode},
		hosts: map[string]string{physicalNode: virtualNode}}
	first := kubeletEvent("a", "Failed", "Failed to pull image on "+physicalNode+" for "+physicalName, 2, started)
	second := kubeletEvent("b", "Failed", first.Message, 3, started.Add(time.Minute))
	e := target.virtualEvent(testClusterID, []*corev1.Event{second, first})
	if e.Count != 5 || !e.FirstTimestamp.Time.Equal(started.Add(-time.Second)) || !e.LastTimestamp.Time.Equal(started.Add(time.Minute)) {
		t.Errorf("count %d first %v last %v, want 5 and the first and last of both", e.Count, e.FirstTimestamp, e.LastTimestamp)
	}
	if e.Message != "Failed to pull image on "+virtualNode+" for web" || strings.Contains(e.Message, physicalName) {
		t.Errorf("message %q shows physical names", e.Message)
	}
	if e.Source.Component != "kubeocean-syncer/kubelet" || e.ReportingController != e.Source.Component || e.Source.Host != virtualNode {
		t.Errorf("source %+v, reporting %q", e.Source, e.ReportingController)
	}
	if e.Namespace != "team-a" || e.InvolvedObject.UID != "vuid" || e.InvolvedObject.FieldPath != "spec.containers{app}" {
		t.Errorf("event %s/%s about %+v", e.Namespace, e.Name, e.InvolvedObject)
	}
	again := target.virtualEvent(testClusterID, []*corev1.Event{first})
	if again.Name != e.Name {
		t.Errorf("name %q then %q: not stable across runs", e.Name, again.Name)
	}
	other := kubeletEvent("c", "Failed", "Failed to pull image on "+physicalNode, 1, started)
	if target.virtualEvent(testClusterID, []*corev1.Event{other}).Name == e.Name {
		t.Error("another message shares the virtual event's name")
	}
	unknownHost := first.DeepCopy()
	unknownHost.Source.Host = "some-other-node"
	if h := target.virtualEvent(testClusterID, []*corev1.Event{unknownHost}).Source.Host; h != "" {
		t.Errorf("a physical host %q is shown", h)
	}
}

func TestVirtualEventNameFits(t *testing.T) {
	name := virtualEventName(podRef("ns", strings.Repeat("a", 253), "u"), "agg")
	if len(name) > 253 || !strings.HasPrefix(name, "aaaa") {
		t.Errorf("name %q (%d chars)", name, len(name))
	}
}
