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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

func terminating(pod *corev1.Pod, grace int64) *corev1.Pod {
	pod.DeletionTimestamp = &metav1.Time{Time: now}
	pod.DeletionGracePeriodSeconds = ptr.To(grace)
	return pod
}

func assertDelete(t *testing.T, action clienttesting.Action, wantGrace int64, wantUID string) {
	t.Helper()
	opts := action.(clienttesting.DeleteAction).GetDeleteOptions()
	if ptr.Deref(opts.GracePeriodSeconds, -1) != wantGrace || opts.Preconditions == nil || string(ptr.Deref(opts.Preconditions.UID, "")) != wantUID {
		t.Errorf("delete options = grace %v, preconditions %+v; want grace %d and UID %s",
			ptr.Deref(opts.GracePeriodSeconds, -1), opts.Preconditions, wantGrace, wantUID)
	}
}

// A virtual pod deleted before its physical pod was made: a live read
// where the name rule puts the physical pod finds none, and the virtual pod
// is finished at once.
func TestDeletionBeforeCreation(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{terminating(podtest.BoundPod(), 30)}})
	f.mustReconcile()
	assertWrites(t, f, "virtual delete pods")
	assertDelete(t, actions(f.virtualKube, "delete", "pods")[0], 0, string(virtualUID))
}

// A virtual pod deleted after its physical pod was made but before the
// mapping was recorded (the bottom-up side's first status write): its
// physical pod, found by name and proven by the virtual UID it records, is
// deleted first, not left behind.
func TestDeletionBeforeTheMappingIsRecorded(t *testing.T) {
	virtual := terminating(podtest.BoundPod(), 30)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physicalFor(podtest.BoundPod())}})
	f.mustReconcile()
	assertWrites(t, f, "physical delete pods")
	assertDelete(t, actions(f.physicalKube, "delete", "pods")[0], 30, string(physicalUID))
}

// A running physical pod is deleted with the virtual pod's grace period;
// the virtual pod is finished only once the physical pod is gone. Its
// events bring the pod back, so only the cache's word that it is gone
// costs a live read.
func TestDeletionWaitsForPhysicalPod(t *testing.T) {
	virtual := withTokenVolume(terminating(podtest.Mapped(podtest.BoundPod(), physicalUID), 30))
	physical := physicalFor(virtual)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical},
		physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now)}})
	// The physical kubelet takes its time: the delete only marks the pod.
	f.react(f.physicalKube, "delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	f.mustReconcile()
	assertWrites(t, f, "physical delete pods")
	assertDelete(t, actions(f.physicalKube, "delete", "pods")[0], 30, string(physicalUID))

	// Reconciling while it terminates neither deletes it again nor
	// finishes the virtual pod.
	terminatingPhysical := physical.DeepCopy()
	terminatingPhysical.DeletionTimestamp = &metav1.Time{Time: now}
	f.cache("physicalPods", terminatingPhysical)
	f.mustReconcile()
	assertWrites(t, f)
	if reads := actions(f.physicalKube, "get", "pods"); len(reads) != 0 {
		t.Errorf("%d live reads of the physical pod while the cache shows it, want 0", len(reads))
	}

	// Gone: the token Secret goes, and the virtual pod is finished.
	f.uncache("physicalPods", physical)
	if err := f.physicalKube.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), mountNS, physicalName); err != nil {
		t.Fatal(err)
	}
	f.mustReconcile()
	assertWrites(t, f, "physical delete secrets", "virtual delete pods")
	assertDelete(t, actions(f.virtualKube, "delete", "pods")[0], 0, string(virtualUID))
	if reads := actions(f.physicalKube, "get", "pods"); len(reads) != 1 {
		t.Errorf("%d live reads of the physical pod, want 1: the check that the cache's gone is true", len(reads))
	}
}

// A physical pod that goes at once (it never ran) lets the virtual pod be
// finished on its deletion event.
func TestDeletionPhysicalGoneAtOnce(t *testing.T) {
	virtual := terminating(podtest.Mapped(podtest.BoundPod(), physicalUID), 30)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physicalFor(virtual)}})
	f.mustReconcile()
	assertWrites(t, f, "physical delete pods")
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f, "virtual delete pods")
}

// A physical pod whose deletion the cache delivered is gone: the virtual
// pod is finished without asking the physical cluster. Only a deletion
// the informer delivered counts, and only for a while.
func TestDeletionSeenByTheCacheNeedsNoLiveRead(t *testing.T) {
	for name, tc := range map[string]struct {
		delivered bool
		after     time.Duration
		wantReads int
	}{
		"deletion delivered":              {delivered: true, wantReads: 0},
		"no deletion delivered":           {wantReads: 1},
		"deletion delivered long ago":     {delivered: true, after: deletedPodMemory + time.Second, wantReads: 1},
		"deletion delivered a moment ago": {delivered: true, after: time.Second, wantReads: 0},
	} {
		t.Run(name, func(t *testing.T) {
			virtual := terminating(podtest.Mapped(podtest.BoundPod(), physicalUID), 30)
			physical := physicalFor(virtual)
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
			if tc.delivered {
				handler := recordDeletions{deleted: &f.controller.deleted, clock: f.clock, ResourceEventHandler: cache.ResourceEventHandlerFuncs{}}
				handler.OnDelete(cache.DeletedFinalStateUnknown{Key: mountNS + "/" + physical.Name, Obj: physical})
			}
			f.clock.Step(tc.after)
			f.mustReconcile()
			assertWrites(t, f, "virtual delete pods")
			if reads := actions(f.physicalKube, "get", "pods"); len(reads) != tc.wantReads {
				t.Errorf("%d live reads of the physical pod, want %d", len(reads), tc.wantReads)
			}
		})
	}
}

// The physical pod our cache has not seen yet is still found and deleted.
func TestDeletionUncachedPhysicalPod(t *testing.T) {
	virtual := terminating(podtest.Mapped(podtest.BoundPod(), ""), 10)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, livePhysical: []runtime.Object{physicalFor(virtual)}})
	f.react(f.physicalKube, "delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	f.mustReconcile()
	assertWrites(t, f, "physical delete pods")
}

func TestDeletionAlreadyFinishing(t *testing.T) {
	virtual := terminating(podtest.BoundPod(), 0)
	virtual.Finalizers = []string{"example.com/hold"}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
	f.mustReconcile()
	assertWrites(t, f)
}

// A physical pod that vanished after it was seen fails the virtual pod,
// with a reason saying so; reconciling again writes nothing.
func TestLostPhysicalPodFailsVirtualPod(t *testing.T) {
	virtual := withTokenVolume(podtest.Mapped(podtest.BoundPod(), physicalUID))
	virtual.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
	}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now)}})
	f.mustReconcile()
	assertWrites(t, f, "physical delete secrets", "virtual update pods/status")

	failed := f.virtualPod()
	if failed.Status.Phase != corev1.PodFailed || failed.Status.Reason != kubeoceanv1alpha1.ReasonPhysicalPodLost ||
		!strings.Contains(failed.Status.Message, "no longer exists") || !strings.Contains(failed.Status.Message, physicalName) {
		t.Errorf("status = %s %s %q, want Failed %s naming the physical pod", failed.Status.Phase, failed.Status.Reason, failed.Status.Message, kubeoceanv1alpha1.ReasonPhysicalPodLost)
	}
	if s := failed.Status.ContainerStatuses[0]; s.State.Terminated == nil || s.Ready {
		t.Errorf("container status = %+v, want terminated and not ready", s)
	}
	if c := findCondition(failed.Status.Conditions, corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
		t.Errorf("Ready condition = %+v, want False", c)
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "Warning "+kubeoceanv1alpha1.ReasonPhysicalPodLost) {
		t.Errorf("events = %v, want one Warning %s", events, kubeoceanv1alpha1.ReasonPhysicalPodLost)
	}

	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
}

// The bottom-up side saw the physical pod before our cache did: a live
// read shows it is there, and nothing is failed.
func TestLostCheckedLive(t *testing.T) {
	virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, livePhysical: []runtime.Object{physicalFor(virtual)}})
	f.mustReconcile()
	assertWrites(t, f)
}

// Once the virtual pod is gone, its token Secret goes with its physical
// pod, never before.
func TestTokenSecretCleanedUpAfterVirtualPod(t *testing.T) {
	t.Run("physical pod gone", func(t *testing.T) {
		f := newFixture(t, seed{physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now)}})
		f.mustReconcile()
		assertWrites(t, f, "physical delete secrets")
		assertDelete(t, actions(f.physicalKube, "delete", "secrets")[0], -1, "secret-uid")
	})
	t.Run("physical pod still there", func(t *testing.T) {
		f := newFixture(t, seed{physicalPods: []*corev1.Pod{physicalFor(podtest.BoundPod())}, physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now)}})
		f.mustReconcile()
		assertWrites(t, f)
	})
}

// A virtual pod mapped into another namespace than the binding's (mapped
// before its mount namespace changed, which the schema now forbids) is
// still deleted: its physical pod and token Secret there go, found live
// since nothing is cached outside the mount namespace, and then the
// virtual pod is finished instead of hanging in Terminating. A token
// Secret there that is not this binding's stays.
func TestDeletionOfPodMappedElsewhere(t *testing.T) {
	const oldMount = "old-mount"
	for name, tc := range map[string]struct {
		secretOwner ownership.Owner
		wantWrites  []string
	}{
		"our token Secret":        {secretOwner: testOwner, wantWrites: []string{"physical delete pods", "physical delete secrets", "virtual delete pods"}},
		"another binding's token": {secretOwner: ownership.Owner{ClusterID: testClusterID, BindingUID: "other"}, wantWrites: []string{"physical delete pods", "virtual delete pods"}},
	} {
		t.Run(name, func(t *testing.T) {
			virtual := terminating(podtest.Mapped(podtest.BoundPod(), physicalUID), 30)
			virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodNamespace] = oldMount
			physical := physicalFor(virtual)
			physical.Namespace = oldMount
			secret := tokenSecret(virtualUID, now)
			secret.Namespace, secret.Labels = oldMount, tc.secretOwner.Stamp(map[string]string{kubeoceanv1alpha1.LabelPodToken: "true"})
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, livePhysical: []runtime.Object{physical, secret}})
			f.mustReconcile()
			assertWrites(t, f, tc.wantWrites...)
			if del := actions(f.physicalKube, "delete", "pods"); len(del) != 1 || del[0].GetNamespace() != oldMount {
				t.Errorf("physical pod deletes = %v, want one in %s", del, oldMount)
			} else {
				assertDelete(t, del[0], 30, string(physicalUID))
			}
		})
	}
}

// A physical pod an older version made (no binding identity, so not in
// the scoped cache) for this very virtual pod (its UID says so) is
// adopted: the identity labels are patched on, nothing is failed.
func TestLegacyPhysicalPodAdopted(t *testing.T) {
	virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
	legacy := physicalFor(virtual)
	legacy.Labels = map[string]string{"app": "web", kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, livePhysical: []runtime.Object{legacy}})
	f.mustReconcile()
	assertWrites(t, f, "physical patch pods")
	adopted, err := f.physicalPod()
	if err != nil || !testOwner.Owns(adopted) {
		t.Fatalf("physical pod after adoption: %v, %v; want the binding's identity", adopted, err)
	}

	// A pod without identity made for another virtual pod is not ours.
	other := physicalFor(virtual)
	other.Labels = legacy.Labels
	other.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "another-virtual-pod"
	f = newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, livePhysical: []runtime.Object{other}})
	f.mustReconcile()
	for _, w := range f.takeWrites() {
		if strings.HasPrefix(w, "physical") {
			t.Errorf("wrote %q to a physical pod that is not provably ours", w)
		}
	}
}

// A pod whose mapping annotations name another pod's physical twin (forged
// by whoever may edit it) takes nothing of that pod with it when it is
// deleted: neither the physical pod nor its token Secret, which record the
// virtual pod they were made for. It is finished all the same.
func TestDeletionOfForgedMappingSparesTheVictim(t *testing.T) {
	victim := withTokenVolume(podtest.Mapped(podtest.BoundPod(), physicalUID))
	forger := terminating(podtest.Mapped(podtest.BoundPod(), physicalUID), 30)
	forger.Name, forger.UID = "probe", "forger-uid"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{victim, forger}, physicalPods: []*corev1.Pod{physicalFor(victim)},
		physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now)}})
	_, ctx := ktesting.NewTestContext(t)
	if _, err := f.controller.reconcile(ctx, cache.ObjectName{Namespace: virtualNS, Name: "probe"}); err != nil {
		t.Fatal(err)
	}
	assertWrites(t, f, "virtual delete pods")
	assertDelete(t, actions(f.virtualKube, "delete", "pods")[0], 0, "forger-uid")
}

// Once a pod is gone and known by its key only, the token Secret of its
// physical name goes only if it records that pod.
func TestCleanUpAfterLeavesATokenSecretOfAnotherPod(t *testing.T) {
	other := tokenSecret("other-uid", now)
	other.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName] = "someone-else"
	f := newFixture(t, seed{physicalSecrets: []*corev1.Secret{other}})
	f.mustReconcile()
	assertWrites(t, f)

	f = newFixture(t, seed{physicalSecrets: []*corev1.Secret{tokenSecret("earlier-uid", now)}})
	f.mustReconcile()
	assertWrites(t, f, "physical delete secrets")
}
