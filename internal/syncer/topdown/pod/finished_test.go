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
	"testing"

	corev1 "k8s.io/api/core/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

func succeeded(pod *corev1.Pod, exitCode int32) *corev1.Pod {
	pod.Status.Phase = corev1.PodSucceeded
	if exitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Completed"}}}}
	return pod
}

// A finished physical pod is deleted once the virtual pod shows its final
// status, not before; the virtual pod is left as it is.
func TestFinishedPhysicalPodDeletedOnceStatusCopied(t *testing.T) {
	for name, exitCode := range map[string]int32{"succeeded": 0, "failed": 3} {
		t.Run(name, func(t *testing.T) {
			virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
			physical := succeeded(physicalFor(virtual), exitCode)
			// The phase is copied, the container states not yet.
			virtual.Status.Phase = physical.Status.Phase
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}})
			if res := f.mustReconcile(); res.RequeueAfter != finalStatusRecheck {
				t.Errorf("requeue after %v, want %v while the final status is not copied", res.RequeueAfter, finalStatusRecheck)
			}
			assertWrites(t, f)

			f.cache("virtualPods", succeeded(virtual.DeepCopy(), exitCode))
			f.mustReconcile()
			assertWrites(t, f, "physical delete pods")
			assertDelete(t, actions(f.physicalKube, "delete", "pods")[0], 0, string(physicalUID))
		})
	}
}

// Once the physical pod is gone its token Secret goes; nothing is
// created again, and the virtual pod is not written.
func TestFinishedPodLeavesNothing(t *testing.T) {
	virtual := succeeded(podtest.Mapped(podtest.BoundPod(), physicalUID), 0)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now)}})
	f.mustReconcile()
	assertWrites(t, f, "physical delete secrets")
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
}

// A physical pod still running under a finished virtual pod is deleted:
// the virtual pod can never run again.
func TestRunningPhysicalPodOfFinishedVirtualPodDeleted(t *testing.T) {
	virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
	virtual.Status.Phase = corev1.PodFailed
	physical := physicalFor(virtual)
	physical.Status.Phase = corev1.PodRunning
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}})
	f.mustReconcile()
	assertWrites(t, f, "physical delete pods")
}

// The physical pod of an earlier virtual pod of the same name is not this
// one's to delete.
func TestFinishedPodSparesAnotherPodsTwin(t *testing.T) {
	virtual := succeeded(podtest.Mapped(podtest.BoundPod(), physicalUID), 0)
	physical := succeeded(physicalFor(virtual), 0)
	physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "earlier-uid"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}})
	f.mustReconcile()
	assertWrites(t, f)
}
