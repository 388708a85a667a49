package resources

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	if u.Namespace != "apps" || u.Name != "web" || u.UID != "u1" || u.ResourceVersion != "7" || u.NodeName != "n1" || !u.HoldsResources {
		t.Fatalf("identity lost: %+v", u)
	}
	if u.Labels != nil || u.Annotations != nil {
		t.Fatal("PodUsage must not keep labels or annotations")
	}
	total := corev1.ResourceList{}
	u.AddTo(total)
	if !equality.Semantic.DeepEqual(total, PodRequests(pod)) {
		t.Fatalf("AddTo = %v, want %v", total, PodRequests(pod))
	}

	copied := u.DeepCopyObject().(*PodUsage)
	copied.Requests[0].Milli = 1
	if !u.SameUsage(UsageOf(pod)) || u.SameUsage(copied) {
		t.Fatal("DeepCopyObject shares requests, or SameUsage misjudges")
	}
	finished := pod.DeepCopy()
	finished.Status.Phase = corev1.PodSucceeded
	if u.SameUsage(UsageOf(finished)) {
		t.Fatal("a pod that finished must not weigh the same")
	}
}
