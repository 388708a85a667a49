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

package pod

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

const testBindingName = "worker-1"

// A pod whose physical name another binding's pod holds makes the binding
// say so (PhysicalNamesTaken True, naming the pod, the physical pod and
// the binding UID it carries); once the blocker is gone and the pod
// created, the condition turns False. Each write happens once.
func TestBindingConditionNamesBlockedPods(t *testing.T) {
	bindings := kubeoceanfake.NewClientset(&kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: testBindingName, UID: testBinding}})
	virtual := podtest.Mapped(podtest.BoundPod(), "")
	blocker := physicalFor(virtual)
	blocker.Labels = ownership.Owner{ClusterID: testClusterID, BindingUID: earlierBinding}.Stamp(nil)
	blocker.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "earlier-virtual-pod"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, livePhysical: []runtime.Object{blocker},
		predecessors: predecessorsWhere(), bindingStatus: bindings.KubeoceanV1alpha1()})
	f.mustReconcile()
	condition := bindingCondition(t, bindings)
	if condition == nil || condition.Status != metav1.ConditionTrue || condition.Reason != kubeoceanv1alpha1.ReasonPhysicalNameTakenByOther ||
		!strings.Contains(condition.Message, virtualNS+"/web: physical pod "+mountNS+"/"+blocker.Name) ||
		!strings.Contains(condition.Message, "binding UID "+string(earlierBinding)) {
		t.Fatalf("condition = %+v, want True naming the pod, its blocker and the binding UID", condition)
	}
	f.mustReconcile()
	if n := len(statusUpdates(bindings)); n != 1 {
		t.Errorf("%d status updates after the same pass twice, want 1", n)
	}

	if err := f.physicalKube.CoreV1().Pods(mountNS).Delete(context.Background(), blocker.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile()
	if condition := bindingCondition(t, bindings); condition == nil || condition.Status != metav1.ConditionFalse {
		t.Fatalf("condition = %+v, want False once the pod is created", condition)
	}
}

func bindingCondition(t *testing.T, bindings *kubeoceanfake.Clientset) *metav1.Condition {
	t.Helper()
	binding, err := bindings.KubeoceanV1alpha1().ClusterBindings().Get(context.Background(), testBindingName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(binding.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken)
}

func statusUpdates(bindings *kubeoceanfake.Clientset) []string {
	var updates []string
	for _, a := range bindings.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			updates = append(updates, a.GetResource().Resource)
		}
	}
	return updates
}
