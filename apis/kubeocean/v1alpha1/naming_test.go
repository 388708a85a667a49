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

// The expected hashes were computed with md5sum, apart from the code.
func TestPhysicalName(t *testing.T) {
	tests := []struct {
		namespace, name, want string
	}{
		{namespace: "default", name: "nginx", want: "nginx-29b36e2c6835dded8a115aee874d1ddc"},
		{namespace: "team-a", name: strings.Repeat("x", 40), want: strings.Repeat("x", 30) + "-f4d85af41ed08333c4e759cc3f77cfa9"},
	}
	for _, tt := range tests {
		if got := PhysicalName(tt.namespace, tt.name); got != tt.want {
			t.Errorf("PhysicalName(%q, %q) = %q, want %q", tt.namespace, tt.name, got, tt.want)
		}
	}
	if PhysicalName("a", "web") == PhysicalName("b", "web") {
		t.Error("the same name in two namespaces must map to two physical names")
	}
}

func TestVirtualNodeName(t *testing.T) {
	if got := VirtualNodeName("cls-a", "node-1"); got != "vnode-cls-a-node-1" {
		t.Errorf("short name = %q", got)
	}
	long := strings.Repeat("n", 60)
	got := VirtualNodeName("cls-a", long)
	if want := "vnode-cls-a-nnnnnnnnnnnnnnnnnn-5174d59f2162cf9ddc15149e8eb00384"; got != want {
		t.Errorf("long name = %q, want %q", got, want)
	}
	if len(got) > validation.DNS1123LabelMaxLength || len(validation.IsDNS1123Label(got)) > 0 {
		t.Errorf("long node name %q is not a valid label value", got)
	}
	if got == VirtualNodeName("cls-b", long) {
		t.Error("hashed names must differ between clusters")
	}
}
