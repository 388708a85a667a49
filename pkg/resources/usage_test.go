package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
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
	if total := usageOn("n1", u); !equality.Semantic.DeepEqual(total, PodRequests(pod)) {
		t.Fatalf("usage = %v, want %v", total, PodRequests(pod))
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
	if total := usageOn("n1", u); !equality.Semantic.DeepEqual(total, PodRequests(pod)) {
		t.Fatalf("usage = %v, want %v", total, PodRequests(pod))
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
