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
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func dependencyCondition(pod *corev1.Pod) *corev1.PodCondition {
	return findCondition(pod.Status.Conditions, kubeoceanv1alpha1.PodConditionDependenciesReady)
}

// A pod whose ConfigMap is missing waits: a condition and an event say
// why, once; no physical pod is made until the ConfigMap is there; the
// condition turns True once the physical pod exists.
func TestDependenciesNotReady(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.BoundPod()}})
	f.dependents.errs["ConfigMap/config"] = &dependents.NotReadyError{Kind: dependents.KindConfigMap, Namespace: virtualNS, Name: "config", Reason: dependents.ReasonNotFound}

	_, err := f.reconcile()
	if err == nil || controller.IsTerminal(err) {
		t.Fatalf("error = %v, want one that is retried", err)
	}
	assertWrites(t, f, "virtual update pods/status")
	condition := dependencyCondition(f.virtualPod())
	if condition == nil || condition.Status != corev1.ConditionFalse || condition.Reason != kubeoceanv1alpha1.ReasonDependencyNotReady ||
		!strings.Contains(condition.Message, "ConfigMap team-a/config not ready: NotFound") {
		t.Errorf("condition = %+v, want False %s naming the ConfigMap", condition, kubeoceanv1alpha1.ReasonDependencyNotReady)
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "Normal "+kubeoceanv1alpha1.ReasonDependencyNotReady) {
		t.Errorf("events = %v, want one %s", events, kubeoceanv1alpha1.ReasonDependencyNotReady)
	}
	if f.virtualPod().Status.Phase != corev1.PodPending {
		t.Errorf("phase = %s, want Pending", f.virtualPod().Status.Phase)
	}

	// Still missing: no new write, no new event.
	f.syncCaches()
	if _, err := f.reconcile(); err == nil {
		t.Fatal("no error while the ConfigMap is missing")
	}
	assertWrites(t, f)
	if events := f.events(); len(events) != 0 {
		t.Errorf("events = %v, want none", events)
	}

	// There now: the pod is created, then the condition turns True.
	delete(f.dependents.errs, "ConfigMap/config")
	f.mustReconcile()
	assertWrites(t, f, "physical create pods")
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f, "virtual update pods/status")
	if condition := dependencyCondition(f.virtualPod()); condition == nil || condition.Status != corev1.ConditionTrue {
		t.Errorf("condition = %+v, want True", condition)
	}
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
}

// A missing object the pod refers to optionally does not hold it back.
func TestOptionalMissingDependency(t *testing.T) {
	virtual := podtest.BoundPod()
	virtual.Spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Optional = ptr.To(true)
	virtual.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
	f.dependents.errs["ConfigMap/config"] = &dependents.NotReadyError{Kind: dependents.KindConfigMap, Namespace: virtualNS, Name: "config", Reason: dependents.ReasonNotFound}
	f.dependents.errs["Secret/regcred"] = &dependents.NotReadyError{Kind: dependents.KindSecret, Namespace: virtualNS, Name: "regcred", Reason: dependents.ReasonNotFound}
	f.mustReconcile()
	assertWrites(t, f, "physical create pods")
	created := actions(f.physicalKube, "create", "pods")[0].(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	if name := created.Spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Name; name != podtest.PhysicalNameOf("config") {
		t.Errorf("optional ConfigMap reference = %q, want %q", name, podtest.PhysicalNameOf("config"))
	}
}

// A required object that is being deleted holds the pod back, unlike a
// missing optional one.
func TestOptionalDependencyNotReadyForOtherReason(t *testing.T) {
	virtual := podtest.BoundPod()
	virtual.Spec.Containers[0].Env[0].ValueFrom.ConfigMapKeyRef.Optional = ptr.To(true)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
	f.dependents.errs["ConfigMap/config"] = &dependents.NotReadyError{Kind: dependents.KindConfigMap, Namespace: virtualNS, Name: "config", Reason: dependents.ReasonDeleting}
	if _, err := f.reconcile(); err == nil {
		t.Fatal("no error for a ConfigMap being deleted")
	}
	assertWrites(t, f, "virtual update pods/status")
}

// A name conflict is shown as a Warning and rechecked slowly: only someone
// removing the foreign object can resolve it.
func TestDependencyConflict(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}})
	f.dependents.errs["Secret/creds"] = &dependents.ConflictError{Kind: dependents.KindSecret, Namespace: virtualNS, Name: "creds", PhysicalName: podtest.PhysicalNameOf("creds")}
	result, err := f.reconcile()
	if err != nil || result.RequeueAfter != conflictRecheck {
		t.Fatalf("reconcile = %+v, %v; want a recheck after %v", result, err, conflictRecheck)
	}
	assertWrites(t, f, "virtual update pods/status")
	if c := dependencyCondition(f.virtualPod()); c == nil || c.Status != corev1.ConditionFalse || c.Reason != kubeoceanv1alpha1.ReasonDependencyConflict {
		t.Errorf("condition = %+v, want False %s", c, kubeoceanv1alpha1.ReasonDependencyConflict)
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "Warning "+kubeoceanv1alpha1.ReasonDependencyConflict) {
		t.Errorf("events = %v, want one Warning %s", events, kubeoceanv1alpha1.ReasonDependencyConflict)
	}
}

// Failing to reach a cluster is retried without bothering the user.
func TestDependencyTransientError(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}})
	f.dependents.errs["Secret/creds"] = errors.New("connection refused")
	if _, err := f.reconcile(); err == nil || controller.IsTerminal(err) {
		t.Fatalf("error = %v, want one that is retried", err)
	}
	assertWrites(t, f)
	if events := f.events(); len(events) != 0 {
		t.Errorf("events = %v, want none", events)
	}
}

func TestRequiredReferences(t *testing.T) {
	pod := podtest.BoundPod()
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env,
		corev1.EnvVar{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "optional-config"}, Key: "k", Optional: ptr.To(true)}}},
		// Optional here, required in a volume below: required.
		corev1.EnvVar{Name: "MIXED", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "mixed"}, Key: "k", Optional: ptr.To(true)}}},
	)
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "m", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mixed"}}},
		{Name: "o", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "optional-secret", Optional: ptr.To(true)}}},
	}
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}}
	got := requiredReferences(pod)
	if want := []string{"config"}; !slices.Equal(sortedList(got.configMaps), want) {
		t.Errorf("required ConfigMaps = %v, want %v", sortedList(got.configMaps), want)
	}
	if want := []string{"creds", "mixed"}; !slices.Equal(sortedList(got.secrets), want) {
		t.Errorf("required Secrets = %v, want %v", sortedList(got.secrets), want)
	}
}

func sortedList(s sets.Set[string]) []string { return sets.List(s) }
