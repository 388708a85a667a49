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

package connectivity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// TestClaimMountNamespace: the first binding claims the namespace; the same
// binding (or its recreation under the same name in the same virtual
// cluster) keeps it; a binding of another name or another virtual cluster
// is refused and changes nothing.
func TestClaimMountNamespace(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kubeocean-system", Name: "c1-kubeconfig"},
		Data:       map[string][]byte{"kubeconfig": kubeconfig(t)},
	}
	client := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mount-c1"}})
	checker := New(secretGetter(secret, nil), Options{Build: func(*rest.Config) (kubernetes.Interface, error) { return client, nil }})
	first := Claim{VirtualCluster: "vc-a", Binding: "c1", BindingUID: "uid-1", ClusterID: "c1"}
	recorded := func() map[string]string {
		t.Helper()
		cm, err := client.CoreV1().ConfigMaps("mount-c1").Get(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data
	}

	if failure := checker.ClaimMountNamespace(ctx, spec(), first); failure != nil {
		t.Fatalf("first claim: %v", failure)
	}
	if got := recorded()[kubeoceanv1alpha1.ClaimKeyBindingUID]; got != "uid-1" {
		t.Fatalf("claim records binding UID %q, want uid-1", got)
	}
	if failure := checker.ClaimMountNamespace(ctx, spec(), first); failure != nil {
		t.Fatalf("the same binding again: %v", failure)
	}

	for _, other := range []Claim{
		{VirtualCluster: "vc-a", Binding: "c2", BindingUID: "uid-2", ClusterID: "c1"},
		{VirtualCluster: "vc-b", Binding: "c1", BindingUID: "uid-3", ClusterID: "c1"},
	} {
		failure := checker.ClaimMountNamespace(ctx, spec(), other)
		if failure == nil || failure.Reason != kubeoceanv1alpha1.ReasonMountNamespaceTaken || failure.Permanent {
			t.Fatalf("claim by %+v = %v, want a transient %s", other, failure, kubeoceanv1alpha1.ReasonMountNamespaceTaken)
		}
		if got := recorded()[kubeoceanv1alpha1.ClaimKeyBindingUID]; got != "uid-1" {
			t.Fatalf("a refused claim changed the record to %q", got)
		}
	}

	recreated := first
	recreated.BindingUID = "uid-4"
	if failure := checker.ClaimMountNamespace(ctx, spec(), recreated); failure != nil {
		t.Fatalf("the recreated binding: %v", failure)
	}
	if got := recorded()[kubeoceanv1alpha1.ClaimKeyBindingUID]; got != "uid-4" {
		t.Fatalf("the recreated binding did not take the claim over: %q", got)
	}
}
