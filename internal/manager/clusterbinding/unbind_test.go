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
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

func deleting(b *kubeoceanv1alpha1.ClusterBinding, finalizers ...string) *kubeoceanv1alpha1.ClusterBinding {
	now := metav1.NewTime(start)
	b.DeletionTimestamp = &now
	b.Finalizers = finalizers
	return b
}

func TestUnbindWaitsForTheSyncersCleanup(t *testing.T) {
	b := deleting(newBinding("worker-1", "w1"), managerFinalizer, syncerFinalizer)
	b.Status.Phase = kubeoceanv1alpha1.ClusterBindingReady
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "c"))
	f.runner.running[b.Name] = true

	result, err, actions := f.reconcile(b.Name)

	if err != nil || result.RequeueAfter != 0 || !slices.Equal(verbs(actions), []string{"update/status"}) {
		t.Fatalf("reconcile = %v, requeue %v, writes %v; want only the status", err, result.RequeueAfter, verbs(actions))
	}
	if len(f.runner.removed) != 0 || len(f.runner.ensured) != 0 {
		t.Errorf("the running syncer was touched: ensured %v, removed %v", f.runner.ensured, f.runner.removed)
	}
	if ready := conditionOf(t, f.cached(b.Name), conditionReady); ready.Reason != kubeoceanv1alpha1.ReasonUnbinding {
		t.Errorf("Ready = %+v", ready)
	}
	if _, err, actions := f.reconcile(b.Name); err != nil || len(actions) != 0 {
		t.Errorf("second reconcile = %v, writes %v", err, verbs(actions))
	}
}

func TestUnbindStartsTheSyncerToCleanUp(t *testing.T) {
	b := deleting(newBinding("worker-1", "w1"), managerFinalizer, syncerFinalizer)
	f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b}, kubeconfigSecret(b, "c"))
	f.runner.state = syncers.State{Phase: syncers.PhaseFailed, Reason: kubeoceanv1alpha1.ReasonSyncerFailed, Message: "connection refused"}

	result, err, _ := f.reconcile(b.Name)

	if err != nil || len(f.runner.ensured) != 1 || result.RequeueAfter != blockedRecheck {
		t.Fatalf("reconcile = %v, ensured %v, requeue %v", err, f.runner.ensured, result.RequeueAfter)
	}
	got := f.cached(b.Name)
	ready := conditionOf(t, got, conditionReady)
	if got.Status.Phase != kubeoceanv1alpha1.ClusterBindingFailed || ready.Reason != kubeoceanv1alpha1.ReasonUnbindingBlocked ||
		!strings.Contains(ready.Message, "connection refused") || !strings.Contains(ready.Message, kubeoceanv1alpha1.AnnotationForceUnbind+"=true") {
		t.Errorf("phase %s, Ready %+v", got.Status.Phase, ready)
	}
	if events := fixtures.Events(f.recorder); len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+kubeoceanv1alpha1.ReasonUnbindingBlocked) {
		t.Errorf("events = %v", events)
	}
}

func TestUnbindReleasesOnceTheSyncerIsGone(t *testing.T) {
	tests := []struct {
		name           string
		finalizers     []string
		force          bool
		syncerGone     bool
		wantFinalizers []string // nil: no update expected
		wantEvents     []string
	}{
		{name: "syncer cleaned up", finalizers: []string{managerFinalizer, "other"}, syncerGone: true,
			wantFinalizers: []string{"other"}, wantEvents: []string{"Normal " + kubeoceanv1alpha1.EventUnbound}},
		{name: "syncer still stopping", finalizers: []string{managerFinalizer}, syncerGone: false},
		{name: "forced", finalizers: []string{managerFinalizer, syncerFinalizer, "other"}, force: true, syncerGone: true,
			wantFinalizers: []string{"other"}, wantEvents: []string{"Warning " + kubeoceanv1alpha1.EventForceUnbind, "Normal " + kubeoceanv1alpha1.EventUnbound}},
		{name: "forced without the syncer's finalizer", finalizers: []string{managerFinalizer}, force: true, syncerGone: true,
			wantFinalizers: []string{}, wantEvents: []string{"Normal " + kubeoceanv1alpha1.EventUnbound}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := deleting(newBinding("worker-1", "w1"), tt.finalizers...)
			if tt.force {
				b.Annotations = map[string]string{kubeoceanv1alpha1.AnnotationForceUnbind: "true"}
			}
			f := newFixture(t, []*kubeoceanv1alpha1.ClusterBinding{b})
			f.runner.gone = tt.syncerGone

			result, err, actions := f.reconcile(b.Name)

			if err != nil || !slices.Equal(f.runner.removed, []string{b.Name}) {
				t.Fatalf("reconcile = %v, removed %v", err, f.runner.removed)
			}
			if tt.wantFinalizers == nil {
				if len(actions) != 0 || result.RequeueAfter != removalRecheck {
					t.Fatalf("writes %v, requeue %v; want none until the syncer is gone", verbs(actions), result.RequeueAfter)
				}
				return
			}
			if !slices.Equal(verbs(actions), []string{"update"}) {
				t.Fatalf("writes = %v", verbs(actions))
			}
			got := actions[0].(clienttesting.UpdateAction).GetObject().(*kubeoceanv1alpha1.ClusterBinding)
			if !slices.Equal(got.Finalizers, tt.wantFinalizers) && !(len(got.Finalizers) == 0 && len(tt.wantFinalizers) == 0) {
				t.Errorf("finalizers = %v, want %v", got.Finalizers, tt.wantFinalizers)
			}
			events := fixtures.Events(f.recorder)
			if !eventsStartWith(events, tt.wantEvents) || len(events) != len(tt.wantEvents) {
				t.Errorf("events = %v, want %v", events, tt.wantEvents)
			}
			if tt.force && slices.Contains(tt.finalizers, syncerFinalizer) && !strings.Contains(events[0], "kubeocean.io/cluster-id=w1") {
				t.Errorf("the ForceUnbind event does not say what is left: %s", events[0])
			}
		})
	}
}
