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

package hostports

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

func TestOf(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "init", Ports: []corev1.ContainerPort{{ContainerPort: 1, HostPort: 1}}},
			{Name: "sidecar", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: []corev1.ContainerPort{{ContainerPort: 2, HostPort: 2, Protocol: corev1.ProtocolUDP}}},
		},
		Containers: []corev1.Container{
			{Name: "a", Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 8080, HostPort: 80, HostIP: "10.0.0.1"}}},
			{Name: "b", Ports: []corev1.ContainerPort{{ContainerPort: 443, HostPort: 443}, {ContainerPort: 443, HostPort: 443}}},
		},
	}}
	want := []Port{
		{IP: bindAll, Protocol: corev1.ProtocolUDP, Port: 2},
		{IP: "10.0.0.1", Protocol: corev1.ProtocolTCP, Port: 80},
		{IP: bindAll, Protocol: corev1.ProtocolTCP, Port: 443},
	}
	if got := Of(pod); !slices.Equal(got, want) {
		t.Errorf("Of = %v, want %v", got, want)
	}
	if got := Of(&corev1.Pod{}); got != nil {
		t.Errorf("Of(no ports) = %v, want nil", got)
	}
}

func TestConflicts(t *testing.T) {
	all80 := Port{IP: bindAll, Protocol: corev1.ProtocolTCP, Port: 80}
	one80 := Port{IP: "10.0.0.1", Protocol: corev1.ProtocolTCP, Port: 80}
	two80 := Port{IP: "10.0.0.2", Protocol: corev1.ProtocolTCP, Port: 80}
	udp80 := Port{IP: bindAll, Protocol: corev1.ProtocolUDP, Port: 80}
	all81 := Port{IP: bindAll, Protocol: corev1.ProtocolTCP, Port: 81}
	for _, tc := range []struct {
		a, b Port
		want bool
	}{
		{all80, all80, true}, {all80, one80, true}, {one80, all80, true}, {one80, one80, true},
		{one80, two80, false}, {all80, udp80, false}, {all80, all81, false},
	} {
		if got := tc.a.Conflicts(tc.b); got != tc.want {
			t.Errorf("%v conflicts with %v = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if got := Conflicting([]Port{one80}, []Port{two80, all80, all81}); !slices.Equal(got, []Port{all80}) {
		t.Errorf("Conflicting = %v", got)
	}
}

func TestTracker(t *testing.T) {
	tr := NewTracker()
	type change struct {
		node  string
		freed bool
	}
	var changes []change
	tr.OnChange(func(node string, freed bool) { changes = append(changes, change{node, freed}) })
	p80 := Port{IP: bindAll, Protocol: corev1.ProtocolTCP, Port: 80}
	p90 := Port{IP: bindAll, Protocol: corev1.ProtocolTCP, Port: 90}
	web := cache.ObjectName{Namespace: "ns", Name: "web"}
	db := cache.ObjectName{Namespace: "ns", Name: "db"}

	steps := []struct {
		name    string
		do      func()
		a, b    []Port
		changes []change
	}{
		{"a pod without ports", func() { tr.Set(web, "a", nil) }, nil, nil, nil},
		{"web binds 80 on a", func() { tr.Set(web, "a", []Port{p80}) }, []Port{p80}, nil, []change{{"a", false}}},
		{"the same again", func() { tr.Set(web, "a", []Port{p80}) }, []Port{p80}, nil, nil},
		{"db binds 80 and 90 on a", func() { tr.Set(db, "a", []Port{p80, p90}) }, []Port{p80, p90}, nil, []change{{"a", false}}},
		{"db drops 90", func() { tr.Set(db, "a", []Port{p80}) }, []Port{p80}, nil, []change{{"a", true}}},
		{"web moves to b", func() { tr.Set(web, "b", []Port{p80}) }, []Port{p80}, []Port{p80}, []change{{"a", true}, {"b", false}}},
		{"db finishes", func() { tr.Set(db, "", nil) }, nil, []Port{p80}, []change{{"a", true}}},
		{"web goes", func() { tr.Set(web, "", nil) }, nil, nil, []change{{"b", true}}},
	}
	for _, s := range steps {
		changes = nil
		s.do()
		if got := tr.Used("a"); !slices.Equal(got, s.a) {
			t.Errorf("%s: used on a = %v, want %v", s.name, got, s.a)
		}
		if got := tr.Used("b"); !slices.Equal(got, s.b) {
			t.Errorf("%s: used on b = %v, want %v", s.name, got, s.b)
		}
		if !slices.Equal(changes, s.changes) {
			t.Errorf("%s: changes %v, want %v", s.name, changes, s.changes)
		}
	}
	if len(tr.pods) != 0 || len(tr.nodes) != 0 {
		t.Errorf("tracker keeps %d pods, %d nodes after all went", len(tr.pods), len(tr.nodes))
	}
}

func TestIsPlaceholder(t *testing.T) {
	pod := &corev1.Pod{}
	pod.Labels = map[string]string{LabelPlaceholder: "true"}
	if IsPlaceholder(pod) {
		t.Error("a pod without managed-by is a placeholder")
	}
	pod.Labels["kubeocean.io/managed-by"] = "kubeocean"
	if !IsPlaceholder(pod) {
		t.Error("a placeholder is not")
	}
}
