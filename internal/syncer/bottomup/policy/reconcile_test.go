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

package policy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceaninformerfactory "github.com/kubeocean/kubeocean/generated/informers/externalversions"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const (
	binding = "binding-a"
	mount   = "mount-a"
)

// fixture is a controller over fake clients whose informer caches are
// seeded by hand, so a test decides exactly what each reconcile sees.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	policies cache.Indexer
	nodes    cache.Indexer
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	c        *Controller
}

func newFixture(t *testing.T, policies []*kubeoceanv1alpha1.ResourceLeasingPolicy, nodes ...*corev1.Node) *fixture {
	t.Helper()
	objects := make([]runtime.Object, len(policies))
	for i, p := range policies {
		objects[i] = p
	}
	f := &fixture{
		t:        t,
		client:   fake.NewClientset(objects...),
		recorder: record.NewFakeRecorder(20),
		clock:    clocktesting.NewFakeClock(monday10),
	}
	_, f.ctx = ktesting.NewTestContext(t)
	oceanFactory := kubeoceaninformerfactory.NewSharedInformerFactory(f.client, 0)
	kubeFactory := kubeinformers.NewSharedInformerFactory(kubefake.NewClientset(), 0)
	policyInformer := oceanFactory.Kubeocean().V1alpha1().ResourceLeasingPolicies()
	nodeInformer := kubeFactory.Core().V1().Nodes()
	c, err := New(Options{
		BindingName:    binding,
		MountNamespace: mount,
		Client:         f.client.KubeoceanV1alpha1(),
		Policies:       policyInformer,
		VirtualNodes:   nodeInformer,
		Recorder:       f.recorder,
		Clock:          f.clock,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.policies = policyInformer.Informer().GetIndexer()
	f.nodes = nodeInformer.Informer().GetIndexer()
	for _, p := range policies {
		f.mustAdd(f.policies, p)
	}
	for _, n := range nodes {
		f.mustAdd(f.nodes, n)
	}
	return f
}

func (f *fixture) mustAdd(indexer cache.Indexer, obj any) {
	f.t.Helper()
	if err := indexer.Add(obj); err != nil {
		f.t.Fatal(err)
	}
}

// reconcile runs one reconcile and returns its result, its error and the
// writes it made; the writes are fed back into the cache, as the informer
// would.
func (f *fixture) reconcile(name string) (controller.Result, error, []clienttesting.Action) {
	f.t.Helper()
	f.client.ClearActions()
	result, err := f.c.reconcile(f.ctx, name)
	actions := f.client.Actions()
	for _, a := range actions {
		if update, ok := a.(clienttesting.UpdateAction); ok {
			if err := f.policies.Update(update.GetObject()); err != nil {
				f.t.Fatal(err)
			}
		}
		if patch, ok := a.(clienttesting.PatchAction); ok {
			patched, err := f.client.Tracker().Get(patch.GetResource(), "", patch.GetName())
			if err != nil {
				f.t.Fatal(err)
			}
			if err := f.policies.Update(patched); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	return result, err, actions
}

// events drains the events recorded so far.
func (f *fixture) events() []string {
	var got []string
	for {
		select {
		case e := <-f.recorder.Events:
			got = append(got, e)
		default:
			return got
		}
	}
}

func (f *fixture) cached(name string) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	f.t.Helper()
	p, err := f.c.policies.Get(name)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}

func newPolicy(name, cluster string, windows ...kubeoceanv1alpha1.TimeWindow) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	return &kubeoceanv1alpha1.ResourceLeasingPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 2, ResourceVersion: "1"},
		Spec:       kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: cluster, TimeWindows: windows},
	}
}

func withFinalizer(p *kubeoceanv1alpha1.ResourceLeasingPolicy) *kubeoceanv1alpha1.ResourceLeasingPolicy {
	p.Finalizers = append(p.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy)
	return p
}

func virtualNode(name, bindingName, policy string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name: name,
		Labels: map[string]string{
			kubeoceanv1alpha1.LabelManagedBy:        kubeoceanv1alpha1.ManagedByKubeocean,
			kubeoceanv1alpha1.LabelClusterBinding:   bindingName,
			kubeoceanv1alpha1.LabelClusterID:        "cid",
			kubeoceanv1alpha1.LabelPhysicalNodeName: name,
		},
		Annotations: map[string]string{kubeoceanv1alpha1.AnnotationResourceLeasingPolicy: policy},
	}}
}

func verbsOf(actions []clienttesting.Action) []string {
	var verbs []string
	for _, a := range actions {
		verb := a.GetVerb()
		if sub := a.GetSubresource(); sub != "" {
			verb += "/" + sub
		}
		verbs = append(verbs, verb)
	}
	return verbs
}

func expectVerbs(t *testing.T, actions []clienttesting.Action, want ...string) {
	t.Helper()
	got := verbsOf(actions)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("writes = %v, want %v", got, want)
	}
}

func TestStatus(t *testing.T) {
	tests := []struct {
		name         string
		policy       *kubeoceanv1alpha1.ResourceLeasingPolicy
		phase        kubeoceanv1alpha1.ResourceLeasingPolicyPhase
		active       metav1.ConditionStatus
		activeReason string
		window       bool
		next         *time.Time
		event        string
	}{
		{
			name:         "inside its window",
			policy:       withFinalizer(newPolicy("p", binding, window("09:00", "17:00"))),
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyActive,
			active:       metav1.ConditionTrue,
			activeReason: kubeoceanv1alpha1.ReasonInTimeWindow,
			window:       true,
			next:         new(time.Date(2026, time.March, 2, 17, 0, 0, 0, time.UTC)),
			event:        "Normal " + kubeoceanv1alpha1.EventPolicyActivated,
		},
		{
			name:         "outside its window",
			policy:       withFinalizer(newPolicy("p", binding, window("20:00", "23:00"))),
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyInactive,
			active:       metav1.ConditionFalse,
			activeReason: kubeoceanv1alpha1.ReasonOutsideTimeWindows,
			next:         new(time.Date(2026, time.March, 2, 20, 0, 0, 0, time.UTC)),
			event:        "Normal " + kubeoceanv1alpha1.EventPolicyDeactivated,
		},
		{
			name:         "without windows",
			policy:       withFinalizer(newPolicy("p", binding)),
			phase:        kubeoceanv1alpha1.ResourceLeasingPolicyActive,
			active:       metav1.ConditionTrue,
			activeReason: kubeoceanv1alpha1.ReasonNoTimeWindows,
			event:        "Normal " + kubeoceanv1alpha1.EventPolicyActivated,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{tt.policy})
			result, err, actions := f.reconcile("p")
			if err != nil {
				t.Fatal(err)
			}
			expectVerbs(t, actions, "update/status")
			status := f.cached("p").Status
			if status.Phase != tt.phase || status.ObservedGeneration != 2 {
				t.Errorf("phase %s generation %d, want %s 2", status.Phase, status.ObservedGeneration, tt.phase)
			}
			valid := meta.FindStatusCondition(status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid)
			if valid == nil || valid.Status != metav1.ConditionTrue || valid.Reason != kubeoceanv1alpha1.ReasonValid || valid.ObservedGeneration != 2 {
				t.Errorf("Valid = %+v", valid)
			}
			active := meta.FindStatusCondition(status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive)
			if active == nil || active.Status != tt.active || active.Reason != tt.activeReason || !active.LastTransitionTime.Time.Equal(monday10) {
				t.Errorf("Active = %+v", active)
			}
			if (status.ActiveTimeWindow != nil) != tt.window {
				t.Errorf("activeTimeWindow = %v", status.ActiveTimeWindow)
			}
			switch {
			case tt.next == nil && (status.NextTransitionTime != nil || result.RequeueAfter != 0):
				t.Errorf("nextTransitionTime %v, requeue %v; want none", status.NextTransitionTime, result.RequeueAfter)
			case tt.next != nil && (status.NextTransitionTime == nil || !status.NextTransitionTime.Time.Equal(*tt.next)):
				t.Errorf("nextTransitionTime = %v, want %v", status.NextTransitionTime, *tt.next)
			case tt.next != nil && result.RequeueAfter != tt.next.Sub(monday10):
				t.Errorf("requeue after %v, want exactly %v (the next boundary)", result.RequeueAfter, tt.next.Sub(monday10))
			}
			if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], tt.event) {
				t.Errorf("events = %q, want one %q", events, tt.event)
			}

			// Settled: the same reconcile again writes and says nothing,
			// and still asks to come back at the boundary.
			again, err, actions := f.reconcile("p")
			if err != nil || len(actions) != 0 || again != result {
				t.Errorf("second reconcile: %+v, %v, writes %v; want %+v and no write", again, err, verbsOf(actions), result)
			}
			if events := f.events(); len(events) != 0 {
				t.Errorf("second reconcile recorded %q", events)
			}
		})
	}
}

func TestWindowBoundaryFlipsTheStatus(t *testing.T) {
	f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{withFinalizer(newPolicy("p", binding, window("09:00", "17:00")))})
	result, err, _ := f.reconcile("p")
	if err != nil {
		t.Fatal(err)
	}
	f.events()

	// The requeue fires when the window closes.
	f.clock.Step(result.RequeueAfter)
	result, err, actions := f.reconcile("p")
	if err != nil {
		t.Fatal(err)
	}
	expectVerbs(t, actions, "update/status")
	status := f.cached("p").Status
	if status.Phase != kubeoceanv1alpha1.ResourceLeasingPolicyInactive || status.ActiveTimeWindow != nil {
		t.Fatalf("at the close: phase %s, window %v", status.Phase, status.ActiveTimeWindow)
	}
	closed := time.Date(2026, time.March, 2, 17, 0, 0, 0, time.UTC)
	if active := meta.FindStatusCondition(status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionActive); !active.LastTransitionTime.Time.Equal(closed) {
		t.Errorf("Active moved at %v, want %v", active.LastTransitionTime, closed)
	}
	if valid := meta.FindStatusCondition(status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid); !valid.LastTransitionTime.Time.Equal(monday10) {
		t.Errorf("Valid moved to %v without a transition", valid.LastTransitionTime)
	}
	if result.RequeueAfter != 16*time.Hour {
		t.Errorf("requeue after %v, want 16h until Tuesday 09:00", result.RequeueAfter)
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Normal "+kubeoceanv1alpha1.EventPolicyDeactivated) {
		t.Errorf("events = %q", events)
	}
}

func TestInvalidPolicyFailsOnce(t *testing.T) {
	policy := withFinalizer(newPolicy("p", binding, window("09:00", "17:00")))
	policy.Spec.TimeZone = "Mars/Olympus_Mons"
	f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{policy})

	result, err, actions := f.reconcile("p")
	if !controller.IsTerminal(err) || result.RequeueAfter != 0 {
		t.Fatalf("reconcile = %+v, %v; want a terminal error and no requeue", result, err)
	}
	expectVerbs(t, actions, "update/status")
	status := f.cached("p").Status
	valid := meta.FindStatusCondition(status.Conditions, kubeoceanv1alpha1.ResourceLeasingPolicyConditionValid)
	if status.Phase != kubeoceanv1alpha1.ResourceLeasingPolicyFailed || valid == nil || valid.Status != metav1.ConditionFalse ||
		valid.Reason != kubeoceanv1alpha1.ReasonInvalidSpec || !strings.Contains(valid.Message, "spec.timeZone") {
		t.Fatalf("status = %+v", status)
	}
	if status.NextTransitionTime != nil || status.ActiveTimeWindow != nil {
		t.Errorf("a failed policy reports window %v and next %v", status.ActiveTimeWindow, status.NextTransitionTime)
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+kubeoceanv1alpha1.EventInvalidPolicy) || !strings.Contains(events[0], "Mars/Olympus_Mons") {
		t.Errorf("events = %q, want one InvalidPolicy warning", events)
	}

	// Reported once: the reconcile that follows the status write neither
	// writes nor reports (logs, events) again.
	result, err, actions = f.reconcile("p")
	if err != nil || result.RequeueAfter != 0 || len(actions) != 0 || len(f.events()) != 0 {
		t.Errorf("second reconcile: %+v, %v, writes %v; want no error, no requeue, no write, no event", result, err, verbsOf(actions))
	}

	// Fixing the spec (an update event) brings it back.
	fixed := f.cached("p").DeepCopy()
	fixed.Spec.TimeZone = "UTC"
	fixed.Generation = 3
	if err := f.policies.Update(fixed); err != nil {
		t.Fatal(err)
	}
	if _, err, actions = f.reconcile("p"); err != nil {
		t.Fatal(err)
	}
	expectVerbs(t, actions, "update/status")
	if got := f.cached("p").Status; got.Phase != kubeoceanv1alpha1.ResourceLeasingPolicyActive || got.ObservedGeneration != 3 {
		t.Errorf("after the fix: phase %s generation %d", got.Phase, got.ObservedGeneration)
	}
}

func TestNoFinalizerWhileTheBindingIsGoing(t *testing.T) {
	f := newFixture(t, []*kubeoceanv1alpha1.ResourceLeasingPolicy{newPolicy("going", binding)})
	f.c.active = func() bool { return false }
	_, err, actions := f.reconcile("going")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if a.GetSubresource() == "" && (a.GetVerb() == "update" || a.GetVerb() == "patch") {
			t.Fatalf("metadata written while the binding is going away: %v", a)
		}
	}
	if slices.Contains(f.cached("going").Finalizers, finalizer) {
		t.Fatal("a finalizer was added although the binding is going away")
	}
}
