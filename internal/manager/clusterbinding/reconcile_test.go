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
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
	"github.com/kubeocean/kubeocean/pkg/remotecluster"
)

func conditionOf(t *testing.T, b *kubeoceanv1alpha1.ClusterBinding, conditionType string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(b.Status.Conditions, conditionType)
	if c == nil {
		t.Fatalf("no %s condition in %+v", conditionType, b.Status.Conditions)
	}
	return *c
}

func TestReconcileNewBindingBecomesReady(t *testing.T) {
	b := newBinding("worker-1", "w1")
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "config-1"))

	_, err, actions := f.reconcile(b.Name)
	if err != nil || !slices.Equal(verbs(actions), []string{"update"}) || !slices.Contains(f.cached(b.Name).Finalizers, managerFinalizer) {
		t.Fatalf("first reconcile: %v, writes %v; want the finalizer added alone", err, verbs(actions))
	}

	result, err, actions := f.reconcile(b.Name)
	if err != nil || !slices.Equal(verbs(actions), []string{"update/status", "update/status"}) {
		t.Fatalf("second reconcile: %v, writes %v; want Pending, then the outcome", err, verbs(actions))
	}
	pending := actions[0].(clienttesting.UpdateAction).GetObject().(*kubeoceanv1alpha1.ClusterBinding)
	if pending.Status.Phase != kubeoceanv1alpha1.ClusterBindingPending || conditionOf(t, pending, conditionReady).Status != metav1.ConditionUnknown {
		t.Errorf("first status = %+v, want Pending", pending.Status)
	}
	got := f.cached(b.Name)
	if got.Status.Phase != kubeoceanv1alpha1.ClusterBindingReady || got.Status.ObservedGeneration != 1 ||
		got.Status.LastSyncTime == nil || !got.Status.LastSyncTime.Time.Equal(start) {
		t.Errorf("status = %+v", got.Status)
	}
	for _, conditionType := range []string{conditionReady, conditionConnected, conditionSyncerReady} {
		if c := conditionOf(t, got, conditionType); c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 {
			t.Errorf("condition %+v", c)
		}
	}
	if result.RequeueAfter != DefaultRecheckInterval {
		t.Errorf("requeue after %v, want the recheck interval", result.RequeueAfter)
	}
	if want := []string{"Normal Pending", "Normal Ready"}; !eventsStartWith(fixtures.Events(f.recorder), want) {
		t.Errorf("events do not start with %v", want)
	}
	if !slices.Equal(f.runner.ensured, []string{"worker-1/" + f.c.kubeconfigHash(got)}) {
		t.Errorf("Ensure calls = %v", f.runner.ensured)
	}

	_, err, actions = f.reconcile(b.Name)
	if err != nil || len(actions) != 0 || f.checker.checks != 1 {
		t.Fatalf("third reconcile: %v, writes %v, checks %d; want nothing new", err, verbs(actions), f.checker.checks)
	}

	f.clock.Step(DefaultRecheckInterval)
	_, _, actions = f.reconcile(b.Name)
	if f.checker.checks != 2 || !slices.Equal(verbs(actions), []string{"update/status"}) ||
		!f.cached(b.Name).Status.LastSyncTime.Time.Equal(start.Add(DefaultRecheckInterval)) {
		t.Fatalf("recheck: checks %d, writes %v; want a new check and lastSyncTime", f.checker.checks, verbs(actions))
	}
}

func eventsStartWith(events, prefixes []string) bool {
	if len(events) < len(prefixes) {
		return false
	}
	for i, p := range prefixes {
		if !strings.HasPrefix(events[i], p) {
			return false
		}
	}
	return true
}

func TestReconcileSyncerStartingIsPending(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b})
	f.runner.state = syncers.State{Phase: syncers.PhaseStarting, Reason: kubeoceanv1alpha1.ReasonSyncerUnavailable, Message: "0 of 2 available"}

	f.reconcile(b.Name)

	got := f.cached(b.Name)
	ready, syncerReady := conditionOf(t, got, conditionReady), conditionOf(t, got, conditionSyncerReady)
	if got.Status.Phase != kubeoceanv1alpha1.ClusterBindingPending || ready.Reason != kubeoceanv1alpha1.ReasonSyncerUnavailable || syncerReady.Status != metav1.ConditionFalse {
		t.Errorf("phase %s, Ready %+v, SyncerReady %+v", got.Status.Phase, ready, syncerReady)
	}
	f.runner.state = syncers.State{Phase: syncers.PhaseFailed, Reason: kubeoceanv1alpha1.ReasonSyncerFailed, Message: "crashed", RetryAfter: 20 * time.Second}
	result, _, _ := f.reconcile(b.Name)
	if f.cached(b.Name).Status.Phase != kubeoceanv1alpha1.ClusterBindingFailed || result.RequeueAfter != 20*time.Second {
		t.Errorf("a failed syncer: phase %s, requeue %v", f.cached(b.Name).Status.Phase, result.RequeueAfter)
	}
}

func TestReconcileInvalidBindingIsNotRetried(t *testing.T) {
	invalid := bound(newBinding("worker-1", "w1"))
	invalid.Spec.ServiceNamespaces = []string{"ok", "Not_A_Namespace"}
	older := bound(newBinding("first", "shared"))
	older.CreationTimestamp = metav1.NewTime(start.Add(-2 * time.Hour))
	younger := bound(newBinding("second", "shared"))
	longName := bound(newBinding(strings.Repeat("n", 64), "w2"))
	// A selector the syncer cannot parse: Failed here, and the syncer
	// leaves the binding's virtual nodes as they are.
	selectorTypo := bound(newBinding("worker-3", "w3"))
	selectorTypo.Spec.NodeSelector = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"gpu pool"}}},
	}}}
	tests := []struct {
		binding    *kubeoceanv1alpha1.ClusterBinding
		wantReason string
		wantText   string
	}{
		{invalid, kubeoceanv1alpha1.ReasonInvalidSpec, "spec.serviceNamespaces[1]"},
		{younger, kubeoceanv1alpha1.ReasonDuplicateClusterID, `clusterID "shared" is already used by ClusterBinding first`},
		{longName, kubeoceanv1alpha1.ReasonInvalidName, "at most 63"},
		{selectorTypo, kubeoceanv1alpha1.ReasonInvalidSpec, "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.wantReason, func(t *testing.T) {
			f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{tt.binding, older})

			_, err, actions := f.reconcile(tt.binding.Name)

			if !controller.IsTerminal(err) || !slices.Equal(verbs(actions), []string{"update/status"}) {
				t.Fatalf("reconcile = %v, writes %v; want a terminal error and a status", err, verbs(actions))
			}
			got := f.cached(tt.binding.Name)
			ready := conditionOf(t, got, conditionReady)
			if got.Status.Phase != kubeoceanv1alpha1.ClusterBindingFailed || ready.Reason != tt.wantReason || !strings.Contains(ready.Message, tt.wantText) {
				t.Errorf("phase %s, Ready %+v", got.Status.Phase, ready)
			}
			if c := conditionOf(t, got, conditionConnected); c.Status != metav1.ConditionUnknown {
				t.Errorf("Connected = %+v, want Unknown", c)
			}
			if events := fixtures.Events(f.recorder); len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+tt.wantReason) {
				t.Errorf("events = %v", events)
			}
			if f.checker.checks != 0 || len(f.runner.ensured) != 0 {
				t.Error("an invalid binding was checked or got a syncer")
			}
			if _, err, actions := f.reconcile(tt.binding.Name); err != nil || len(actions) != 0 {
				t.Errorf("second reconcile = %v, writes %v; want nothing", err, verbs(actions))
			}
		})
	}
	t.Run("the older binding keeps its clusterID", func(t *testing.T) {
		f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{younger, older})
		f.reconcile(older.Name)
		if phase := f.cached(older.Name).Status.Phase; phase != kubeoceanv1alpha1.ClusterBindingReady {
			t.Errorf("older binding phase %s", phase)
		}
	})
}

func TestReconcileConfigErrorWaitsForTheSecret(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b})
	f.checker.fail(&connectivity.Failure{Reason: string(remotecluster.ReasonSecretNotFound), Message: "kubeconfig secret kubeocean-system/worker-1-kubeconfig: secret not found", Permanent: true})

	_, err, actions := f.reconcile(b.Name)
	if !controller.IsTerminal(err) || !slices.Equal(verbs(actions), []string{"update/status"}) {
		t.Fatalf("reconcile = %v, writes %v", err, verbs(actions))
	}
	if c := conditionOf(t, f.cached(b.Name), conditionConnected); c.Status != metav1.ConditionFalse || c.Reason != string(remotecluster.ReasonSecretNotFound) {
		t.Errorf("Connected = %+v", c)
	}
	if _, err, actions := f.reconcile(b.Name); err != nil || len(actions) != 0 || f.checker.checks != 1 {
		t.Fatalf("unchanged: %v, writes %v, checks %d; want no check and no write", err, verbs(actions), f.checker.checks)
	}

	fixtures.MustAdd(f.t, f.secrets, kubeconfigSecret(b, "fixed"))
	f.checker.fail(nil)
	if _, err, _ := f.reconcile(b.Name); err != nil || f.checker.checks != 2 {
		t.Fatalf("after the Secret appeared: %v, checks %d", err, f.checker.checks)
	}
	if phase := f.cached(b.Name).Status.Phase; phase != kubeoceanv1alpha1.ClusterBindingReady {
		t.Errorf("phase %s, want Ready", phase)
	}
}

func backoffOf(t *testing.T, b *kubeoceanv1alpha1.ClusterBinding) backoffState {
	t.Helper()
	var state backoffState
	if err := json.Unmarshal([]byte(b.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff]), &state); err != nil {
		t.Fatalf("backoff annotation %q: %v", b.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff], err)
	}
	return state
}

func TestReconcileTransientFailureBacksOff(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "config-1"))
	f.checker.fail(&connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonUnreachable, Message: "the physical cluster at https://w1 did not answer"})

	// An unreachable cluster is probed every UnreachableProbeInterval
	// between the checks of its backoff.
	result, err, actions := f.reconcile(b.Name)
	if err != nil || result.RequeueAfter != UnreachableProbeInterval || !slices.Equal(verbs(actions), []string{"update/status", "update"}) {
		t.Fatalf("first failure: %v, requeue %v, writes %v; want the status, then the backoff annotation", err, result.RequeueAfter, verbs(actions))
	}
	if state := backoffOf(t, f.cached(b.Name)); state.Failures != 1 || !state.RetryAt.Time.Equal(start.Add(30*time.Second)) {
		t.Errorf("backoff = %+v", state)
	}
	if phase := f.cached(b.Name).Status.Phase; phase != kubeoceanv1alpha1.ClusterBindingFailed {
		t.Errorf("phase %s", phase)
	}

	f.clock.Step(10 * time.Second)
	result, _, actions = f.reconcile(b.Name)
	if len(actions) != 0 || f.checker.checks != 1 || f.checker.probes != 1 || result.RequeueAfter != UnreachableProbeInterval {
		t.Fatalf("within the backoff: writes %v, checks %d, probes %d, requeue %v", verbs(actions), f.checker.checks, f.checker.probes, result.RequeueAfter)
	}

	f.clock.Step(20 * time.Second)
	result, _, actions = f.reconcile(b.Name)
	if f.checker.checks != 2 || result.RequeueAfter != UnreachableProbeInterval || !slices.Equal(verbs(actions), []string{"update"}) {
		t.Fatalf("second failure: checks %d, requeue %v, writes %v; want only the annotation", f.checker.checks, result.RequeueAfter, verbs(actions))
	}
	if state := backoffOf(t, f.cached(b.Name)); state.Failures != 2 {
		t.Errorf("backoff = %+v", state)
	}

	// A changed Secret is checked at once, backoff or not.
	fixtures.MustAdd(f.t, f.secrets, kubeconfigSecret(b, "config-2"))
	f.checker.fail(nil)
	_, _, actions = f.reconcile(b.Name)
	got := f.cached(b.Name)
	if f.checker.checks != 3 || got.Status.Phase != kubeoceanv1alpha1.ClusterBindingReady {
		t.Fatalf("after the Secret changed: checks %d, phase %s", f.checker.checks, got.Status.Phase)
	}
	if _, ok := got.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff]; ok || !slices.Equal(verbs(actions), []string{"update/status", "update"}) {
		t.Errorf("backoff annotation %q left, writes %v", got.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff], verbs(actions))
	}
}

// A cluster that answers again ends the backoff at the next probe, however
// long the backoff has grown, also in a manager that resumed it after a
// restart.
func TestUnreachableClusterCheckedAsSoonAsItAnswers(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "config-1"))
	f.checker.fail(&connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonUnreachable, Message: "did not answer"})
	for i := 0; i < 5; i++ { // the backoff grows to 5 minutes
		f.clock.Step(10 * time.Minute)
		f.reconcile(b.Name)
	}
	if state := backoffOf(t, f.cached(b.Name)); state.Failures != 5 || !state.RetryAt.Time.Equal(f.clock.Now().Add(5*time.Minute)) {
		t.Fatalf("backoff = %+v", state)
	}
	// A new manager: empty memory, the binding as stored.
	persisted := f.cached(b.Name).DeepCopy()
	f.c = f.newController()
	fixtures.MustAdd(f.t, f.bindings, persisted)
	fixtures.MustAdd(f.t, f.secrets, kubeconfigSecret(b, "config-1"))
	checks := f.checker.checks
	f.clock.Step(UnreachableProbeInterval)
	if result, _, _ := f.reconcile(b.Name); f.checker.checks != checks || result.RequeueAfter != UnreachableProbeInterval {
		t.Fatalf("while it does not answer: checks %d (was %d), requeue %v", f.checker.checks, checks, result.RequeueAfter)
	}
	f.checker.fail(nil) // it answers again
	f.clock.Step(UnreachableProbeInterval)
	f.reconcile(b.Name)
	got := f.cached(b.Name)
	if f.checker.checks != checks+1 || got.Status.Phase != kubeoceanv1alpha1.ClusterBindingReady {
		t.Fatalf("after it answered: checks %d (was %d), phase %s", f.checker.checks, checks, got.Status.Phase)
	}
	if _, ok := got.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff]; ok {
		t.Errorf("backoff annotation left: %q", got.Annotations[kubeoceanv1alpha1.AnnotationConnectBackoff])
	}
}

// A cluster that answers but refuses (permissions) is not probed: only a
// change or the backoff brings the next check.
func TestRefusingClusterIsNotProbed(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "config-1"))
	f.checker.fail(&connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonInsufficientPermissions, Message: "lacks list nodes"})
	result, _, _ := f.reconcile(b.Name)
	f.clock.Step(10 * time.Second)
	f.reconcile(b.Name)
	if result.RequeueAfter != 30*time.Second || f.checker.probes != 0 || f.checker.checks != 1 {
		t.Fatalf("requeue %v, probes %d, checks %d", result.RequeueAfter, f.checker.probes, f.checker.checks)
	}
}

func TestBackoffSurvivesRestart(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "config-1"))
	f.checker.fail(&connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonInsufficientPermissions, Message: "lacks list nodes"})
	for i := 0; i < 3; i++ {
		result, _, _ := f.reconcile(b.Name)
		f.clock.Step(result.RequeueAfter)
	}
	if state := backoffOf(t, f.cached(b.Name)); state.Failures != 3 {
		t.Fatalf("backoff before the restart = %+v", state)
	}
	f.clock.Step(-time.Minute) // a minute before the retry is due

	// A new manager: empty memory, the binding as stored.
	persisted := f.cached(b.Name).DeepCopy()
	f.c = f.newController()
	fixtures.MustAdd(f.t, f.bindings, persisted)
	fixtures.MustAdd(f.t, f.secrets, kubeconfigSecret(b, "config-1"))

	result, err, actions := f.reconcile(b.Name)
	if err != nil || f.checker.checks != 3 || len(actions) != 0 || result.RequeueAfter != time.Minute {
		t.Fatalf("after the restart: %v, checks %d, writes %v, requeue %v; want the backoff resumed", err, f.checker.checks, verbs(actions), result.RequeueAfter)
	}
	f.clock.Step(time.Minute)
	result, _, _ = f.reconcile(b.Name)
	if f.checker.checks != 4 || result.RequeueAfter != 4*time.Minute || backoffOf(t, f.cached(b.Name)).Failures != 4 {
		t.Fatalf("the retry after the restart: checks %d, requeue %v; want the 4th failure counted", f.checker.checks, result.RequeueAfter)
	}
}

func TestReconcileGoneBindingStopsItsSyncer(t *testing.T) {
	b := bound(newBinding("worker-1", "w1"))
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "c"))
	f.reconcile(b.Name)
	if err := f.bindings.Delete(f.cached(b.Name)); err != nil {
		t.Fatal(err)
	}

	if _, err, actions := f.reconcile(b.Name); err != nil || len(actions) != 0 {
		t.Fatalf("reconcile of a gone binding = %v, %v", err, verbs(actions))
	}
	if !slices.Equal(f.runner.removed, []string{b.Name}) || !slices.Equal(f.checker.forgotten, []string{"kubeocean-system/worker-1-kubeconfig"}) {
		t.Errorf("removed %v, forgotten %v", f.runner.removed, f.checker.forgotten)
	}
}
