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

package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FuzzVirtualNodeName: for any cluster ID and physical node name the API
// accepts, the virtual node name is a valid node name and a valid label
// value (it is the virtual node's hostname label), stays the same, and
// begins with VirtualNodeNamePrefix (the syncer caches only the virtual pods
// bound to nodes with it).
func FuzzVirtualNodeName(f *testing.F) {
	f.Add("cls-1", "worker-a")
	f.Add("cls-1", strings.Repeat("n", 253))
	f.Add("c", "ip-10-0-0-1.eu-west-1.compute.internal")
	f.Add(strings.Repeat("c", 24), strings.Repeat("n", 40))
	f.Add(strings.Repeat("c", 23), strings.Repeat("n", 40))
	f.Add("cls-1", strings.Repeat("a", 20)+"."+strings.Repeat("b", 40))
	f.Fuzz(func(t *testing.T, clusterID, physical string) {
		if len(validation.IsDNS1123Label(clusterID)) > 0 || len(clusterID) > 24 || len(validation.IsDNS1123Subdomain(physical)) > 0 {
			return
		}
		name := VirtualNodeName(clusterID, physical)
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Fatalf("VirtualNodeName(%q, %q) = %q: %v", clusterID, physical, name, errs)
		}
		if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
			t.Fatalf("VirtualNodeName(%q, %q) = %q is no label value: %v", clusterID, physical, name, errs)
		}
		if again := VirtualNodeName(clusterID, physical); again != name {
			t.Fatalf("not stable: %q then %q", name, again)
		}
		if prefix := VirtualNodeNamePrefix(clusterID); !strings.HasPrefix(name, prefix) {
			t.Fatalf("VirtualNodeName(%q, %q) = %q does not begin with %q", clusterID, physical, name, prefix)
		}
	})
}

// FuzzPhysicalName: for any namespace and DNS-subdomain name, the physical
// name is a valid DNS subdomain, at most 63 characters when the name is
// long, and namespaces never share one.
func FuzzPhysicalName(f *testing.F) {
	f.Add("default", "web-0")
	f.Add("apps", strings.Repeat("a", 29)+".b")
	f.Add("apps", strings.Repeat("x", 200))
	f.Fuzz(func(t *testing.T, namespace, name string) {
		if len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return
		}
		got := PhysicalName(namespace, name)
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Fatalf("PhysicalName(%q, %q) = %q: %v", namespace, name, got, errs)
		}
		if len(got) > validation.DNS1123LabelMaxLength {
			t.Fatalf("PhysicalName(%q, %q) = %q is %d long", namespace, name, got, len(got))
		}
		if other := PhysicalName(namespace+"x", name); other == got {
			t.Fatalf("namespaces %q and %qx share %q", namespace, namespace, got)
		}
	})
}

// FuzzPhysicalNodeName: whatever the name, it is read back as written, and
// the label is set only with a valid label value.
func FuzzPhysicalNodeName(f *testing.F) {
	f.Add("worker-a")
	f.Add(strings.Repeat("n", 64))
	f.Add("")
	f.Fuzz(func(t *testing.T, physical string) {
		labels, annotations := map[string]string{}, map[string]string{}
		SetPhysicalNodeName(labels, annotations, physical)
		obj := labelled{labels, annotations}
		if got := PhysicalNodeNameOf(obj); got != physical {
			t.Fatalf("wrote %q, read %q", physical, got)
		}
		for _, v := range labels {
			if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
				t.Fatalf("label value %q: %v", v, errs)
			}
		}
	})
}

type labelled struct{ labels, annotations map[string]string }

func (l labelled) GetLabels() map[string]string      { return l.labels }
func (l labelled) GetAnnotations() map[string]string { return l.annotations }
