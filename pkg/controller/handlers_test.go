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

package controller

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func pod(name, rv, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

// nodeKeys maps a pod to the node it runs on, the way a capacity controller
// would reconcile nodes from pod events.
func nodeKeys(p *corev1.Pod) []string {
	if p.Spec.NodeName == "" {
		return nil
	}
	return []string{p.Spec.NodeName}
}

func TestHandler(t *testing.T) {
	tests := []struct {
		name    string
		handler func(enqueue func(string)) Handler[*corev1.Pod, string]
		event   func(h cache.ResourceEventHandler)
		want    []string
	}{
		{
			name:  "add enqueues the mapped key",
			event: func(h cache.ResourceEventHandler) { h.OnAdd(pod("p", "1", "node-a"), false) },
			want:  []string{"node-a"},
		},
		{
			name:  "update that moves between keys enqueues both",
			event: func(h cache.ResourceEventHandler) { h.OnUpdate(pod("p", "1", "node-a"), pod("p", "2", "node-b")) },
			want:  []string{"node-a", "node-b"},
		},
		{
			name:  "update within one key enqueues it once",
			event: func(h cache.ResourceEventHandler) { h.OnUpdate(pod("p", "1", "node-a"), pod("p", "2", "node-a")) },
			want:  []string{"node-a"},
		},
		{
			name:  "resync with the same resource version is dropped",
			event: func(h cache.ResourceEventHandler) { h.OnUpdate(pod("p", "7", "node-a"), pod("p", "7", "node-a")) },
		},
		{
			name: "delete unwraps a tombstone",
			event: func(h cache.ResourceEventHandler) {
				h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod("p", "3", "node-c")})
			},
			want: []string{"node-c"},
		},
		{
			name:  "objects of another type are ignored",
			event: func(h cache.ResourceEventHandler) { h.OnAdd(&corev1.Node{}, false) },
		},
		{
			name: "filter drops objects it rejects",
			handler: func(enqueue func(string)) Handler[*corev1.Pod, string] {
				return Handler[*corev1.Pod, string]{Enqueue: enqueue, Keys: nodeKeys,
					Filter: func(p *corev1.Pod) bool { return p.Name != "ignored" }}
			},
			event: func(h cache.ResourceEventHandler) {
				h.OnAdd(pod("ignored", "1", "node-a"), false)
				h.OnAdd(pod("kept", "1", "node-b"), false)
			},
			want: []string{"node-b"},
		},
		{
			name: "an update leaving the filter still enqueues",
			handler: func(enqueue func(string)) Handler[*corev1.Pod, string] {
				return Handler[*corev1.Pod, string]{Enqueue: enqueue, Keys: nodeKeys,
					Filter: func(p *corev1.Pod) bool { return p.Labels["managed"] == "true" }}
			},
			event: func(h cache.ResourceEventHandler) {
				old := pod("p", "1", "node-a")
				old.Labels = map[string]string{"managed": "true"}
				h.OnUpdate(old, pod("p", "2", "node-a"))
			},
			want: []string{"node-a"},
		},
		{
			name: "Changed drops updates that do not matter",
			handler: func(enqueue func(string)) Handler[*corev1.Pod, string] {
				return Handler[*corev1.Pod, string]{Enqueue: enqueue, Keys: nodeKeys,
					Changed: func(o, n *corev1.Pod) bool { return o.Spec.NodeName != n.Spec.NodeName }}
			},
			event: func(h cache.ResourceEventHandler) {
				h.OnUpdate(pod("p", "1", "node-a"), pod("p", "2", "node-a"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			enqueue := func(k string) { got = append(got, k) }
			h := Handler[*corev1.Pod, string]{Enqueue: enqueue, Keys: nodeKeys}
			if tt.handler != nil {
				h = tt.handler(enqueue)
			}
			tt.event(h)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObjectKeys(t *testing.T) {
	got := ObjectKeys(pod("p", "1", ""))
	if len(got) != 1 || got[0] != cache.NewObjectName("ns", "p") {
		t.Fatalf("ObjectKeys = %v, want [ns/p]", got)
	}
}
