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

package compact

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/capacity"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

func TestPodUsageMatchesPodRequests(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web", UID: "u1", ResourceVersion: "7",
			Labels: map[string]string{"big": "label"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{NodeName: "n1",
			InitContainers: []corev1.Container{container("cpu", "2")},
			Containers:     []corev1.Container{container("cpu", "500m", "memory", "1Gi", "nvidia.com/gpu", "1")}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	u := UsageOf(pod)
	if u.Namespace != "apps" || u.Name != "web" || u.ResourceVersion != "7" || u.NodeName != "n1" || !u.HoldsResources {
		t.Fatalf("identity lost: %+v", u)
	}
	if key, err := cache.MetaNamespaceKeyFunc(u); err != nil || key != "apps/web" {
		t.Fatalf("store key = %q, %v; want apps/web", key, err)
	}
	if u.GetLabels() != nil || u.GetAnnotations() != nil || u.GetUID() != "" {
		t.Fatal("PodUsage must not keep labels, annotations or the UID")
	}
	if total := usageOn("n1", u); !equality.Semantic.DeepEqual(total, capacity.PodRequests(pod)) {
		t.Fatalf("usage = %v, want %v", total, capacity.PodRequests(pod))
	}

	copied := u.DeepCopyObject().(*PodUsage)
	copied.NodeName = "n2"
	if u.NodeName != "n1" || !u.SameUsage(UsageOf(pod)) || u.SameUsage(copied) {
		t.Fatal("DeepCopyObject shares the object, or SameUsage misjudges a move")
	}
	bigger := pod.DeepCopy()
	bigger.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	if u.SameUsage(UsageOf(bigger)) {
		t.Fatal("a pod requesting more CPU must not weigh the same")
	}
	finished := pod.DeepCopy()
	finished.Status.Phase = corev1.PodSucceeded
	if u.SameUsage(UsageOf(finished)) {
		t.Fatal("a pod that finished must not weigh the same")
	}
}

func TestPodUsageOfABestEffortPodStillTakesASlot(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "idle"},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	u := UsageOf(pod)
	if len(u.Requests()) != 0 {
		t.Fatalf("a pod without requests holds %v", u.Requests())
	}
	if total := usageOn("n1", u); !equality.Semantic.DeepEqual(total, capacity.PodRequests(pod)) {
		t.Fatalf("usage = %v, want %v", total, capacity.PodRequests(pod))
	}
}

// usageOn sums usages alone on node.
func usageOn(node string, usages ...*PodUsage) corev1.ResourceList {
	sums := NewUsageByNode()
	for _, u := range usages {
		sums.Update(nil, u)
	}
	return sums.Of(node)
}

// TestForeignPodCountsEveryPodButTheBindingsOwn: another binding's
// pod (of this virtual cluster or another) holds what it requests, with its
// host ports, like a pod Kubeocean does not run; the binding's own pods and
// legacy pods (whose binding only their mapping proves) hold nothing.
func TestForeignPodCountsEveryPodButTheBindingsOwn(t *testing.T) {
	owner := ownership.Owner{ClusterID: "worker-1", BindingUID: "uid-a"}
	other := ownership.Owner{ClusterID: "worker-1", BindingUID: "uid-b"}
	legacy := map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	tests := []struct {
		name   string
		labels map[string]string
		holds  bool
	}{
		{"a pod Kubeocean does not run", map[string]string{"app": "web"}, true},
		{"another binding's pod", other.Stamp(nil), true},
		{"another virtual cluster's binding with the same cluster ID", ownership.Owner{ClusterID: "worker-1", BindingUID: "uid-c"}.Stamp(nil), true},
		{"the binding's own pod", owner.Stamp(nil), false},
		{"a legacy pod", legacy, false},
	}
	compact := ForeignPod(owner)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "p", Labels: tt.labels},
				Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{container("cpu", "2")}},
				Status:     corev1.PodStatus{Phase: corev1.PodRunning},
			}
			pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
			obj, err := compact(pod)
			if err != nil {
				t.Fatal(err)
			}
			u := obj.(*PodUsage)
			_, node, ports, ok := HostPortsOf(u)
			if u.HoldsResources != tt.holds || !ok {
				t.Fatalf("HoldsResources = %v, want %v", u.HoldsResources, tt.holds)
			}
			if held := node == "n1" && len(ports) == 1; held != tt.holds {
				t.Fatalf("host ports on %q: %v; want held = %v", node, ports, tt.holds)
			}
		})
	}
}

// list is a resource list of name, quantity pairs.
func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// container is a container requesting list(pairs...).
func container(pairs ...string) corev1.Container {
	return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: list(pairs...)}}
}
