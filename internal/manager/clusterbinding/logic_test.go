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

package clusterbinding

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
)

func TestBackoffDelay(t *testing.T) {
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i, w := range want {
		if got := backoffDelay(i + 1); got != w {
			t.Errorf("backoffDelay(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := backoffDelay(1000); got != 5*time.Minute {
		t.Errorf("backoffDelay(1000) = %v", got)
	}
}

func TestReusable(t *testing.T) {
	transient := &connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonUnreachable}
	permanent := &connectivity.Failure{Reason: "KubeconfigInvalid", Permanent: true}
	recheck := 5 * time.Minute
	tests := []struct {
		name   string
		record *connRecord
		inputs string
		now    time.Time
		want   bool
	}{
		{"no record", nil, "1/a", start, false},
		{"success within the recheck", &connRecord{inputs: "1/a", checkedAt: start}, "1/a", start.Add(4 * time.Minute), true},
		{"success due for a recheck", &connRecord{inputs: "1/a", checkedAt: start}, "1/a", start.Add(recheck), false},
		{"success, spec changed", &connRecord{inputs: "1/a", checkedAt: start}, "2/a", start, false},
		{"transient failure in backoff", &connRecord{inputs: "1/a", failure: transient, retryAt: start.Add(time.Minute)}, "1/a", start, true},
		{"transient failure due", &connRecord{inputs: "1/a", failure: transient, retryAt: start}, "1/a", start, false},
		{"transient failure, Secret changed", &connRecord{inputs: "1/a", failure: transient, retryAt: start.Add(time.Minute)}, "1/b", start, false},
		{"permanent failure", &connRecord{inputs: "1/a", failure: permanent}, "1/a", start.Add(24 * time.Hour), true},
		{"permanent failure, Secret changed", &connRecord{inputs: "1/a", failure: permanent}, "1/b", start, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reusable(tt.record, tt.inputs, tt.now, recheck); got != tt.want {
				t.Errorf("reusable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextRecordCountsTransientFailures(t *testing.T) {
	transient := &connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonUnreachable}
	ref := kubeoceanv1alpha1.SecretReference{Namespace: "ns", Name: "s"}
	var record *connRecord
	for i, want := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute} {
		record = nextRecord(record, "1/a", ref, transient, start)
		if record.failures != i+1 || record.retryAt.Sub(start) != want {
			t.Fatalf("failure %d: %+v", i+1, record)
		}
	}
	if r := nextRecord(record, "1/b", ref, transient, start); r.failures != 1 {
		t.Errorf("new inputs kept the count: %+v", r)
	}
	if r := nextRecord(record, "1/a", ref, nil, start); r.failures != 0 || !r.retryAt.IsZero() {
		t.Errorf("a success kept the backoff: %+v", r)
	}
	if r := nextRecord(record, "1/a", ref, &connectivity.Failure{Permanent: true}, start); r.failures != 0 {
		t.Errorf("a permanent failure was counted: %+v", r)
	}
}

func TestBackoffAnnotationRoundTrip(t *testing.T) {
	record := &connRecord{inputs: "3/abc", failure: &connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonUnreachable}, failures: 2,
		retryAt: start.Add(time.Minute + 300*time.Millisecond)}
	b := newBinding("worker-1", "w1")
	b.Generation = 3
	b.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationConnectBackoff: backoffAnnotation(record)}
	b.Status.Conditions = []metav1.Condition{{Type: conditionConnected, Status: metav1.ConditionFalse, Reason: kubeoceanv1alpha1.ReasonUnreachable, Message: "did not answer"}}

	resumed := resumedRecord(b, "3/abc")

	if resumed == nil || resumed.failures != 2 || !resumed.retryAt.Equal(start.Add(time.Minute)) || resumed.failure.Message != "did not answer" {
		t.Fatalf("resumed = %+v", resumed)
	}
	if backoffAnnotation(resumed) != b.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff] {
		t.Error("a resumed record would rewrite the annotation")
	}
	if resumedRecord(b, "4/abc") != nil {
		t.Error("resumed a backoff for other inputs")
	}
	b.Status.Conditions[0].Status = metav1.ConditionTrue
	if resumedRecord(b, "3/abc") != nil {
		t.Error("resumed a backoff of a connected binding")
	}
	if backoffAnnotation(&connRecord{}) != "" || backoffAnnotation(nil) != "" {
		t.Error("a success calls for an annotation")
	}
}

func TestClusterIDOwner(t *testing.T) {
	at := func(name string, age time.Duration) *kubeoceanv1alpha1.ClusterBinding {
		b := newBinding(name, "shared")
		b.CreationTimestamp = metav1.NewTime(start.Add(-age))
		return b
	}
	oldest, old, sameAgeA, sameAgeB := at("oldest", 3*time.Hour), at("old", 2*time.Hour), at("a", time.Hour), at("b", time.Hour)
	other := newBinding("other", "different")
	running := at("z-running", time.Hour)
	running.Status.Conditions = []metav1.Condition{{Type: conditionConnected, Status: metav1.ConditionTrue, Reason: kubeoceanv1alpha1.ReasonConnected}}
	pendingOnly := at("a-pending", time.Hour)
	pendingOnly.Status.Conditions = []metav1.Condition{{Type: conditionConnected, Status: metav1.ConditionUnknown, Reason: kubeoceanv1alpha1.ReasonNotChecked}}
	tests := []struct {
		name  string
		b     *kubeoceanv1alpha1.ClusterBinding
		peers []*kubeoceanv1alpha1.ClusterBinding
		want  string
	}{
		{"alone", old, []*kubeoceanv1alpha1.ClusterBinding{old}, ""},
		{"the oldest keeps it", oldest, []*kubeoceanv1alpha1.ClusterBinding{oldest, old, sameAgeA}, ""},
		{"the oldest owner is named", sameAgeA, []*kubeoceanv1alpha1.ClusterBinding{old, oldest, sameAgeA}, "oldest"},
		{"same age: the name decides", sameAgeB, []*kubeoceanv1alpha1.ClusterBinding{sameAgeA, sameAgeB}, "a"},
		{"same age: first by name keeps it", sameAgeA, []*kubeoceanv1alpha1.ClusterBinding{sameAgeA, sameAgeB}, ""},
		{"other clusterIDs ignored", old, []*kubeoceanv1alpha1.ClusterBinding{other}, ""},
		{"same age: a validated binding keeps it", pendingOnly, []*kubeoceanv1alpha1.ClusterBinding{running, pendingOnly}, "z-running"},
		{"same age: a newcomer cannot take it", running, []*kubeoceanv1alpha1.ClusterBinding{running, pendingOnly}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peers := make([]any, len(tt.peers))
			for i, p := range tt.peers {
				peers[i] = p
			}
			got := clusterIDOwner(tt.b, peers)
			if (got == nil && tt.want != "") || (got != nil && got.Name != tt.want) {
				t.Errorf("owner = %v, want %q", got, tt.want)
			}
		})
	}
}

func TestDesiredStatus(t *testing.T) {
	ok := &connRecord{checkedAt: start}
	ready := &syncers.State{Phase: syncers.PhaseReady, Reason: kubeoceanv1alpha1.ReasonSyncerRunning}
	tests := []struct {
		name                         string
		obs                          observation
		phase                        kubeoceanv1alpha1.ClusterBindingPhase
		ready, connected, syncerCond metav1.ConditionStatus
		reason                       string
	}{
		{"invalid", observation{invalid: &invalidSpec{reason: kubeoceanv1alpha1.ReasonInvalidSpec}},
			kubeoceanv1alpha1.ClusterBindingFailed, metav1.ConditionFalse, metav1.ConditionUnknown, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonInvalidSpec},
		{"unreachable, syncer still running", observation{conn: &connRecord{failure: &connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonUnreachable}}, syncer: ready},
			kubeoceanv1alpha1.ClusterBindingFailed, metav1.ConditionFalse, metav1.ConditionFalse, metav1.ConditionTrue, kubeoceanv1alpha1.ReasonUnreachable},
		{"connected, syncer starting", observation{conn: ok, syncer: &syncers.State{Phase: syncers.PhaseStarting, Reason: kubeoceanv1alpha1.ReasonSyncerStarting}},
			kubeoceanv1alpha1.ClusterBindingPending, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonSyncerStarting},
		{"connected, syncer failed", observation{conn: ok, syncer: &syncers.State{Phase: syncers.PhaseFailed, Reason: kubeoceanv1alpha1.ReasonSyncerTemplateError}},
			kubeoceanv1alpha1.ClusterBindingFailed, metav1.ConditionFalse, metav1.ConditionTrue, metav1.ConditionFalse, kubeoceanv1alpha1.ReasonSyncerTemplateError},
		{"ready", observation{conn: ok, syncer: ready},
			kubeoceanv1alpha1.ClusterBindingReady, metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionTrue, kubeoceanv1alpha1.ReasonReady},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.obs.generation = 4
			status := desiredStatus(kubeoceanv1alpha1.ClusterBindingStatus{}, tt.obs, start)
			if status.Phase != tt.phase || status.ObservedGeneration != 4 {
				t.Errorf("phase %s, observedGeneration %d", status.Phase, status.ObservedGeneration)
			}
			for conditionType, want := range map[string]metav1.ConditionStatus{conditionReady: tt.ready, conditionConnected: tt.connected, conditionSyncerReady: tt.syncerCond} {
				b := &kubeoceanv1alpha1.ClusterBinding{Status: status}
				if got := conditionOf(t, b, conditionType); got.Status != want || got.ObservedGeneration != 4 {
					t.Errorf("%s = %+v, want %s", conditionType, got, want)
				}
			}
			if got := conditionOf(t, &kubeoceanv1alpha1.ClusterBinding{Status: status}, conditionReady).Reason; got != tt.reason {
				t.Errorf("Ready reason %s, want %s", got, tt.reason)
			}
			if (status.LastSyncTime != nil) != (tt.obs.conn == ok) {
				t.Errorf("lastSyncTime = %v", status.LastSyncTime)
			}
		})
	}
}

func TestDesiredStatusKeepsTransitionTimes(t *testing.T) {
	obs := observation{generation: 1, conn: &connRecord{checkedAt: start}, syncer: &syncers.State{Phase: syncers.PhaseReady, Reason: kubeoceanv1alpha1.ReasonSyncerRunning}}
	first := desiredStatus(kubeoceanv1alpha1.ClusterBindingStatus{}, obs, start.Add(500*time.Millisecond))
	again := desiredStatus(first, obs, start.Add(time.Hour))
	for i := range first.Conditions {
		if !again.Conditions[i].LastTransitionTime.Equal(&first.Conditions[i].LastTransitionTime) {
			t.Errorf("%s transition time moved without a change", again.Conditions[i].Type)
		}
		if first.Conditions[i].LastTransitionTime.Time != start {
			t.Errorf("transition time %v not cut to the second", first.Conditions[i].LastTransitionTime)
		}
	}
}

func TestBindingHandler(t *testing.T) {
	index := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{clusterIDIndex: byClusterID})
	a, peer := newBinding("a", "shared"), newBinding("b", "shared")
	for _, b := range []*kubeoceanv1alpha1.ClusterBinding{a, peer, newBinding("c", "other")} {
		if err := index.Add(b); err != nil {
			t.Fatal(err)
		}
	}
	statusOnly := a.DeepCopy()
	statusOnly.ResourceVersion = "2"
	statusOnly.Status.Phase = kubeoceanv1alpha1.ClusterBindingReady
	annotated := statusOnly.DeepCopy()
	annotated.ResourceVersion = "3"
	annotated.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationForceUnbind: "true"}

	tests := []struct {
		name  string
		event func(h cache.ResourceEventHandler)
		want  []string
	}{
		{"added: itself and the bindings sharing its clusterID", func(h cache.ResourceEventHandler) { h.OnAdd(a, false) }, []string{"a", "b"}},
		{"status only", func(h cache.ResourceEventHandler) { h.OnUpdate(a, statusOnly) }, nil},
		{"annotated", func(h cache.ResourceEventHandler) { h.OnUpdate(statusOnly, annotated) }, []string{"a", "b"}},
		{"deleted", func(h cache.ResourceEventHandler) { h.OnDelete(cache.DeletedFinalStateUnknown{Obj: peer}) }, []string{"b", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			tt.event(bindingHandler(index, func(k string) { got = append(got, k) }))
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSecretHandler(t *testing.T) {
	index := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{secretIndex: bySecret})
	a, b := newBinding("a", "a"), newBinding("b", "b")
	b.Spec.SecretRef = a.Spec.SecretRef
	for _, obj := range []*kubeoceanv1alpha1.ClusterBinding{a, b, newBinding("c", "c")} {
		if err := index.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	secret := kubeconfigSecret(a, "v1")
	changed := kubeconfigSecret(a, "v2")
	changed.ResourceVersion = "2"
	relabelled := secret.DeepCopy()
	relabelled.ResourceVersion, relabelled.Labels = "3", map[string]string{"x": "y"}
	unrelated := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "unrelated"}}

	tests := []struct {
		name  string
		event func(h cache.ResourceEventHandler)
		want  []string
	}{
		{"a referenced Secret appears", func(h cache.ResourceEventHandler) { h.OnAdd(secret, false) }, []string{"a", "b"}},
		{"its kubeconfig changes", func(h cache.ResourceEventHandler) { h.OnUpdate(secret, changed) }, []string{"a", "b"}},
		{"only its labels change", func(h cache.ResourceEventHandler) { h.OnUpdate(secret, relabelled) }, nil},
		{"it is deleted", func(h cache.ResourceEventHandler) { h.OnDelete(secret) }, []string{"a", "b"}},
		{"an unrelated Secret", func(h cache.ResourceEventHandler) { h.OnAdd(unrelated, false) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			tt.event(secretHandler(index, func(k string) { got = append(got, k) }))
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %v, want %v", got, tt.want)
			}
		})
	}
}
