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

package dependents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func TestPodReferencesCounts(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	physicalPods := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0).Core().V1().Pods()
	r, err := NewPodReferences(ownership.Owner{ClusterID: testCluster, BindingUID: testBinding}, "mount", pods, nodes, physicalPods)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "ours", Labels: map[string]string{kubeoceanv1alpha1.LabelClusterID: testCluster}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Labels: map[string]string{kubeoceanv1alpha1.LabelClusterID: "c2"}}},
	} {
		if err := nodes.Informer().GetIndexer().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	twin := map[string]string{kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "mount", kubeoceanv1alpha1.AnnotationPhysicalPodName: "p-123"}
	// The twin of virtual pod "ours-uid" is the binding's physical pod;
	// that of "theirs-uid" is another binding's in the same namespace.
	for uid, owner := range map[string]ownership.Owner{
		"ours-uid":   {ClusterID: testCluster, BindingUID: testBinding},
		"theirs-uid": {ClusterID: "c2", BindingUID: "binding-c2"},
	} {
		physical := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "p-" + uid, Labels: owner.Stamp(nil),
			Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualPodUID: uid}}}
		if err := physicalPods.Informer().GetIndexer().Add(physical); err != nil {
			t.Fatal(err)
		}
	}
	twinOf := func(uid string) map[string]string {
		return map[string]string{kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "mount", kubeoceanv1alpha1.AnnotationPhysicalPodName: "p-" + uid}
	}
	withUID := func(p *corev1.Pod, uid string) *corev1.Pod {
		p.UID = types.UID(uid)
		return p
	}
	pod := func(node string, phase corev1.PodPhase, annotations map[string]string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "p", Annotations: annotations},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Phase: phase},
		}
	}
	for name, tc := range map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"running on our node":     {pod: pod("ours", corev1.PodRunning, nil), want: true},
		"pending on our node":     {pod: pod("ours", corev1.PodPending, nil), want: true},
		"unscheduled":             {pod: pod("", corev1.PodPending, nil)},
		"another binding's node":  {pod: pod("theirs", corev1.PodRunning, nil)},
		"unknown node":            {pod: pod("gone", corev1.PodRunning, nil)},
		"finished without a twin": {pod: pod("ours", corev1.PodSucceeded, nil)},
		"finished with a twin":    {pod: withUID(pod("ours", corev1.PodFailed, twinOf("ours-uid")), "ours-uid"), want: true},
		// The pod controller deletes the twin of a finished pod once its
		// final status is copied: a Job's finished pods keep nothing.
		"finished, twin deleted":                          {pod: pod("ours", corev1.PodSucceeded, twin)},
		"finished, the physical pod is another binding's": {pod: withUID(pod("ours", corev1.PodSucceeded, twinOf("theirs-uid")), "theirs-uid")},
		"node gone, our physical pod remains":             {pod: withUID(pod("gone", corev1.PodRunning, twinOf("ours-uid")), "ours-uid"), want: true},
		"node gone, and no physical pod":                  {pod: pod("gone", corev1.PodRunning, twin)},
		// Another binding with the same mount namespace writes the same
		// mapping annotations on its pods: they must not keep our copies.
		"another binding's pod mapped to our namespace": {pod: withUID(pod("theirs", corev1.PodRunning, twinOf("theirs-uid")), "theirs-uid")},
		"a physical pod of ours made for another pod":   {pod: withUID(pod("gone", corev1.PodRunning, twinOf("ours-uid")), "theirs-uid")},
		"twin in another binding's namespace":           {pod: pod("theirs", corev1.PodRunning, map[string]string{kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "other", kubeoceanv1alpha1.AnnotationPhysicalPodName: "p"})},
	} {
		t.Run(name, func(t *testing.T) {
			if got := r.Counts(tc.pod); got != tc.want {
				t.Errorf("Counts = %v, want %v", got, tc.want)
			}
		})
	}

	user := pod("ours", corev1.PodRunning, nil)
	user.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}}}
	if err := pods.Informer().GetIndexer().Add(user); err != nil {
		t.Fatal(err)
	}
	if used, err := r.InUse(references.KindConfigMap, "app", "conf"); err != nil || !used {
		t.Errorf("InUse(conf) = %v, %v; want true", used, err)
	}
	if used, err := r.InUse(references.KindConfigMap, "other", "conf"); err != nil || used {
		t.Errorf("InUse(other/conf) = %v, %v; want false", used, err)
	}
	// A second user of the informer does not add the index twice.
	if _, err := NewPodReferences(ownership.Owner{ClusterID: testCluster, BindingUID: testBinding}, "mount", pods, nodes, physicalPods); err != nil {
		t.Errorf("second NewPodReferences: %v", err)
	}
}

// listCounter counts the lists of an index's users.
type listCounter struct {
	cache.Indexer
	lists int
}

func (l *listCounter) ByIndex(name, value string) ([]any, error) {
	l.lists++
	return l.Indexer.ByIndex(name, value)
}

// TestInUseAsksTheLastUserFirst: while an object is in use, InUse reads
// the pod that answered last time instead of listing every user, and the
// answer still follows that pod going, finishing or moving away.
func TestInUseAsksTheLastUserFirst(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	r, err := NewPodReferences(ownership.Owner{ClusterID: testCluster, BindingUID: testBinding}, "mount", pods, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	counter := &listCounter{Indexer: r.pods}
	r.pods = counter
	if err := nodes.Informer().GetIndexer().Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ours", Labels: map[string]string{kubeoceanv1alpha1.LabelClusterID: testCluster}}}); err != nil {
		t.Fatal(err)
	}
	store := pods.Informer().GetIndexer()
	user := func(name, configMap string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name},
			Spec: corev1.PodSpec{NodeName: "ours", Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
	}
	inUse := func(want bool) {
		t.Helper()
		if used, err := r.InUse(references.KindConfigMap, "app", "conf"); err != nil || used != want {
			t.Fatalf("InUse = %v, %v; want %v", used, err, want)
		}
	}
	for i := range 100 {
		if err := store.Add(user(fmt.Sprintf("p%d", i), "conf")); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		inUse(true)
	}
	if counter.lists != 1 {
		t.Errorf("100 passes over an object in use listed its users %d times, want 1", counter.lists)
	}

	// Whichever pod answered, each change below takes one user away; the
	// last one leaves the object unused.
	for i := range 100 {
		p := user(fmt.Sprintf("p%d", i), "conf")
		switch i % 3 {
		case 0:
			err = store.Delete(p)
		case 1:
			p.Status.Phase = corev1.PodSucceeded
			err = store.Update(p)
		default:
			err = store.Update(user(p.Name, "other"))
		}
		if err != nil {
			t.Fatal(err)
		}
		inUse(i < 99)
	}
	if len(r.witnesses) != 0 {
		t.Errorf("an unused object is still remembered: %v", r.witnesses)
	}
	if err := store.Add(user("late", "conf")); err != nil {
		t.Fatal(err)
	}
	inUse(true)
}

func TestPodHandlerKeys(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "p", ResourceVersion: "1"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "conf"}}}},
				{Name: "d", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			},
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
		},
	}
	for kind, want := range map[string][]cache.ObjectName{
		references.KindConfigMap: {{Namespace: "app", Name: "conf"}},
		references.KindSecret:    {{Namespace: "app", Name: "registry"}},
		references.KindPVC:       {{Namespace: "app", Name: "data"}},
	} {
		var got []cache.ObjectName
		h := PodHandler(kind, func(key cache.ObjectName) { got = append(got, key) })
		h.OnDelete(pod)
		if !slices.Equal(got, want) {
			t.Errorf("%s: keys %v, want %v", kind, got, want)
		}

		// A status update changes nothing that matters; a bind does.
		got = nil
		updated := pod.DeepCopy()
		updated.ResourceVersion = "2"
		updated.Status.Phase = corev1.PodRunning
		h.OnUpdate(pod, updated)
		if len(got) != 0 {
			t.Errorf("%s: status update enqueued %v", kind, got)
		}
		bound := updated.DeepCopy()
		bound.ResourceVersion = "3"
		bound.Spec.NodeName = "ours"
		h.OnUpdate(updated, bound)
		if !slices.Equal(got, want) {
			t.Errorf("%s: bind enqueued %v, want %v", kind, got, want)
		}
	}
}

func TestCSISecretIndexKeys(t *testing.T) {
	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{
		CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", NodePublishSecretRef: &corev1.SecretReference{Namespace: "storage", Name: "creds"}},
	}}}
	if keys, _ := CSISecretIndexKeys(pv); !slices.Equal(keys, []string{"storage/creds"}) {
		t.Errorf("keys %v", keys)
	}
	pv.Spec.CSI.NodePublishSecretRef = nil
	if keys, _ := CSISecretIndexKeys(pv); len(keys) != 0 {
		t.Errorf("keys without a secret %v", keys)
	}
}

func TestUnusedTracker(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Now())
	tracker := NewUnusedTracker(clock, 30*time.Second)
	key := cache.ObjectName{Namespace: "app", Name: "conf"}
	if wait := tracker.Unused(key); wait != 30*time.Second {
		t.Errorf("first: wait %v", wait)
	}
	clock.SetTime(clock.Now().Add(20 * time.Second))
	if wait := tracker.Unused(key); wait != 10*time.Second {
		t.Errorf("after 20s: wait %v", wait)
	}
	clock.SetTime(clock.Now().Add(10 * time.Second))
	if wait := tracker.Unused(key); wait != 0 {
		t.Errorf("after 30s: wait %v", wait)
	}
	// Used again in between: the grace period starts over.
	tracker.Forget(key)
	if wait := tracker.Unused(key); wait != 30*time.Second {
		t.Errorf("after Forget: wait %v", wait)
	}
}

// lifecycleCalls records what a Lifecycle asked for.
type lifecycleCalls struct {
	calls []string
	used  []bool // successive answers of InUse; the last one repeats
}

func (l *lifecycleCalls) lifecycle(clock *clocktesting.FakePassiveClock, ensureErr error) *Lifecycle {
	record := func(name string, err error) func(context.Context, cache.ObjectName) error {
		return func(context.Context, cache.ObjectName) error {
			l.calls = append(l.calls, name)
			return err
		}
	}
	return &Lifecycle{
		Kind:   "ConfigMap",
		Unused: NewUnusedTracker(clock, time.Minute),
		InUse: func(cache.ObjectName) (bool, error) {
			used := l.used[0]
			if len(l.used) > 1 {
				l.used = l.used[1:]
			}
			return used, nil
		},
		Ensure:       record("ensure", ensureErr),
		Release:      record("release", nil),
		DeleteOrphan: record("deleteOrphan", nil),
	}
}

func TestLifecycle(t *testing.T) {
	key := cache.ObjectName{Namespace: "app", Name: "conf"}
	live := &metav1.ObjectMeta{Name: "conf"}
	deleting := &metav1.ObjectMeta{Name: "conf", DeletionTimestamp: ptr.To(metav1.Now())}
	for name, tc := range map[string]struct {
		virtual   metav1.Object
		used      []bool
		ensureErr error
		wait      time.Duration // clock step before a second reconcile
		want      []string
		result    controller.Result
	}{
		"not cached, unused":      {used: []bool{false}, want: []string{"deleteOrphan"}},
		"not cached, used":        {used: []bool{true}, want: []string{"ensure"}},
		"not cached, used, gone":  {used: []bool{true}, ensureErr: &NotReadyError{Kind: KindConfigMap, Reason: ReasonNotFound}, want: []string{"ensure"}},
		"not cached, used, taken": {used: []bool{true}, ensureErr: &ConflictError{Kind: KindConfigMap}, want: []string{"ensure"}, result: controller.RequeueAfter(ConflictRecheck)},
		"being deleted":           {virtual: deleting, used: []bool{true}, want: []string{"release"}},
		"used":                    {virtual: live, used: []bool{true}, want: []string{"ensure"}},
		"conflict":                {virtual: live, used: []bool{true}, ensureErr: &ConflictError{Kind: KindConfigMap}, want: []string{"ensure"}, result: controller.RequeueAfter(ConflictRecheck)},
		"unused: waits":           {virtual: live, used: []bool{false}, result: controller.RequeueAfter(time.Minute)},
		"unused past grace":       {virtual: live, used: []bool{false}, wait: time.Minute, want: []string{"release"}},
		"used again during release": {
			virtual: live, used: []bool{false, false, true}, wait: time.Minute, want: []string{"release", "ensure"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			clock := clocktesting.NewFakePassiveClock(time.Now())
			calls := &lifecycleCalls{used: tc.used}
			l := calls.lifecycle(clock, tc.ensureErr)
			var virtual metav1.Object
			if tc.virtual != nil {
				virtual = tc.virtual
			}
			result, err := l.Reconcile(ctx, key, virtual)
			if tc.wait > 0 {
				clock.SetTime(clock.Now().Add(tc.wait))
				result, err = l.Reconcile(ctx, key, virtual)
			}
			var notReady *NotReadyError
			if errors.As(tc.ensureErr, &notReady) && err != nil {
				t.Errorf("err = %v, want none: the copy is kept and the pods' events bring the key back", err)
			}
			if err != nil && !errors.Is(err, tc.ensureErr) {
				t.Errorf("err = %v", err)
			}
			if !slices.Equal(calls.calls, tc.want) || result != tc.result {
				t.Errorf("calls %v, result %+v; want %v, %+v", calls.calls, result, tc.want, tc.result)
			}
		})
	}
}

// The deletion of a finished pod's physical twin enqueues what the pod
// refers to; adds, updates, running pods and twins of other pods do not.
func TestPhysicalPodGoneHandler(t *testing.T) {
	factory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	pods, nodes := factory.Core().V1().Pods(), factory.Core().V1().Nodes()
	r, err := NewPodReferences(ownership.Owner{ClusterID: testCluster, BindingUID: testBinding}, "mount", pods, nodes, nil)
	if err != nil {
		t.Fatal(err)
	}
	virtual := func(name string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, UID: types.UID(name + "-uid")},
			Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-conf"}}}}}},
			Status: corev1.PodStatus{Phase: phase},
		}
	}
	for _, p := range []*corev1.Pod{virtual("done", corev1.PodSucceeded), virtual("running", corev1.PodRunning)} {
		if err := pods.Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	twin := func(name, uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "mount", Name: "p-" + name, Annotations: map[string]string{
			kubeoceanv1alpha1.AnnotationVirtualPodNamespace: "app", kubeoceanv1alpha1.AnnotationVirtualPodName: name,
			kubeoceanv1alpha1.AnnotationVirtualPodUID: uid}}}
	}
	var got []cache.ObjectName
	h := r.PhysicalPodGoneHandler(references.KindConfigMap, func(k cache.ObjectName) { got = append(got, k) })
	h.OnAdd(twin("done", "done-uid"), false)
	h.OnUpdate(twin("done", "done-uid"), twin("done", "done-uid"))
	h.OnDelete(twin("running", "running-uid"))
	h.OnDelete(twin("done", "earlier-uid"))
	h.OnDelete(twin("gone", "gone-uid"))
	if len(got) != 0 {
		t.Fatalf("enqueued %v, want nothing", got)
	}
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "mount/p-done", Obj: twin("done", "done-uid")})
	if want := []cache.ObjectName{{Namespace: "app", Name: "done-conf"}}; !slices.Equal(got, want) {
		t.Errorf("enqueued %v, want %v", got, want)
	}
}
