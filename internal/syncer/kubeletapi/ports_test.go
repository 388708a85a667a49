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

package kubeletapi

import "testing"

func TestPortAllocator(t *testing.T) {
	a, err := NewPortAllocator(100, 102)
	if err != nil {
		t.Fatal(err)
	}
	// Recorded ports come back first, whatever order nodes show up in.
	if !a.Reserve("b", 101) || a.Reserve("c", 101) || a.Reserve("c", 999) {
		t.Fatal("Reserve: a recorded port in range and free is given, others are not")
	}
	for _, step := range []struct {
		node     string
		recorded int
		want     int
	}{
		{"a", 0, 100},
		{"a", 0, 100},   // stable
		{"b", 0, 101},   // keeps its reserved port
		{"c", 101, 102}, // a port held by another node is never shared
	} {
		got, err := a.Assign(step.node, step.recorded)
		if err != nil || got != step.want {
			t.Fatalf("Assign(%s, %d) = %d, %v; want %d", step.node, step.recorded, got, err, step.want)
		}
	}
	if _, err := a.Assign("d", 0); err == nil {
		t.Fatal("a full range must fail")
	}
	a.Release("a")
	if got, err := a.Assign("d", 0); err != nil || got != 100 {
		t.Fatalf("released port: got %d, %v", got, err)
	}
	if _, err := NewPortAllocator(10, 5); err == nil {
		t.Fatal("an empty range must be refused")
	}
}
