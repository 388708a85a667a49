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
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

// After the virtual apiserver comes back the cache is often behind other
// writers of the pod's status. A lost pod is still failed in the same
// reconcile: the conflict is retried at once from a live read, not left
// to a requeue that no event of a status-only change would bring.
func TestLostPhysicalPodFailedDespiteStaleCache(t *testing.T) {
	virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
	virtual.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
	conflicts := 0
	f.react(f.virtualKube, "update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" || conflicts >= 2 {
			return false, nil, nil
		}
		conflicts++
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), virtual.Name, errors.New("the object has been modified"))
	})
	f.mustReconcile()
	assertWrites(t, f, "virtual update pods/status", "virtual update pods/status", "virtual update pods/status")
	if failed := f.virtualPod(); failed.Status.Phase != corev1.PodFailed || failed.Status.Reason != kubeoceanv1alpha1.ReasonPhysicalPodLost {
		t.Errorf("status = %s %s, want Failed %s", failed.Status.Phase, failed.Status.Reason, kubeoceanv1alpha1.ReasonPhysicalPodLost)
	}
}

// A pod that finished meanwhile (the live read shows it) is left as it is.
func TestLostPhysicalPodFinishedMeanwhile(t *testing.T) {
	virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
	virtual.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
	succeeded := virtual.DeepCopy()
	succeeded.Status.Phase = corev1.PodSucceeded
	if _, err := f.virtualKube.CoreV1().Pods(virtual.Namespace).UpdateStatus(context.Background(), succeeded, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	f.react(f.virtualKube, "update", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), virtual.Name, errors.New("the object has been modified"))
	})
	f.mustReconcile()
	assertWrites(t, f, "virtual update pods/status")
	if got := f.virtualPod(); got.Status.Phase != corev1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded left alone", got.Status.Phase)
	}
}
