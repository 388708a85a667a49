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
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

func withDebugContainer(pod *corev1.Pod, name string) *corev1.Pod {
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
		TargetContainerName: "app",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1",
			Env: []corev1.EnvVar{podtest.ConfigMapEnv("LEVEL", "debug-config"), podtest.FieldEnv("SA", "spec.serviceAccountName")},
			EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "debug-creds"}}}}},
	})
	return pod
}

// kubectl debug: an ephemeral container added to the virtual pod is added
// to the running physical pod through the ephemeralcontainers subresource,
// after the objects it refers to are copied, with its references renamed
// like any container's; once there it is not added again.
func TestEphemeralContainersAddedToPhysicalPod(t *testing.T) {
	running := podtest.Mapped(podtest.BoundPod(), physicalUID)
	physical := physicalFor(running)
	physical.Status.Phase = corev1.PodRunning
	virtual := withDebugContainer(running.DeepCopy(), "debugger-1")
	virtual.Spec.ServiceAccountName = "builder"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}})
	f.mustReconcile()
	assertWrites(t, f, "physical patch pods/ephemeralcontainers")
	for _, want := range []string{"ConfigMap/" + virtualNS + "/debug-config", "Secret/" + virtualNS + "/debug-creds"} {
		if !slices.Contains(f.dependents.calls, want) {
			t.Errorf("copied %v, want %s among them", f.dependents.calls, want)
		}
	}
	patch := actions(f.physicalKube, "patch", "pods/ephemeralcontainers")[0].(clienttesting.PatchAction)
	if patch.GetPatchType() != types.StrategicMergePatchType {
		t.Errorf("patch type %s, want strategic merge", patch.GetPatchType())
	}
	var sent struct {
		Spec struct {
			EphemeralContainers []corev1.EphemeralContainer `json:"ephemeralContainers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(patch.GetPatch(), &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Spec.EphemeralContainers) != 1 {
		t.Fatalf("sent %d ephemeral containers, want 1", len(sent.Spec.EphemeralContainers))
	}
	c := sent.Spec.EphemeralContainers[0]
	if c.Name != "debugger-1" || c.TargetContainerName != "app" {
		t.Errorf("sent %s targeting %q", c.Name, c.TargetContainerName)
	}
	if got := c.Env[0].ValueFrom.ConfigMapKeyRef.Name; got != podtest.PhysicalNameOf("debug-config") {
		t.Errorf("env names ConfigMap %q, want its copy %q", got, podtest.PhysicalNameOf("debug-config"))
	}
	if got := c.Env[1]; got.ValueFrom != nil || got.Value != "builder" {
		t.Errorf("service account env %+v, want the virtual value builder", got)
	}
	if got := c.EnvFrom[0].SecretRef.Name; got != podtest.PhysicalNameOf("debug-creds") {
		t.Errorf("envFrom names Secret %q, want its copy %q", got, podtest.PhysicalNameOf("debug-creds"))
	}

	// The physical pod has it now: nothing more to add. A second one
	// added later is sent alone.
	stored, err := f.physicalPod()
	if err != nil {
		t.Fatal(err)
	}
	f.cache("physicalPods", stored)
	f.mustReconcile()
	assertWrites(t, f)

	f.cache("virtualPods", withDebugContainer(virtual.DeepCopy(), "debugger-2"))
	f.mustReconcile()
	assertWrites(t, f, "physical patch pods/ephemeralcontainers")
	second := actions(f.physicalKube, "patch", "pods/ephemeralcontainers")[1].(clienttesting.PatchAction)
	if err := json.Unmarshal(second.GetPatch(), &sent); err != nil {
		t.Fatal(err)
	}
	if len(sent.Spec.EphemeralContainers) != 1 || sent.Spec.EphemeralContainers[0].Name != "debugger-2" {
		t.Errorf("second patch sent %+v, want debugger-2 alone", sent.Spec.EphemeralContainers)
	}
}

// A pod that does not run yet takes no ephemeral containers; they are
// added once it runs.
func TestEphemeralContainersWaitForRunningPod(t *testing.T) {
	virtual := withDebugContainer(podtest.Mapped(podtest.BoundPod(), physicalUID), "debugger")
	physical := physicalFor(virtual)
	physical.Status.Phase = corev1.PodPending
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}})
	f.mustReconcile()
	assertWrites(t, f)
}

func TestVirtualPodChangedByEphemeralContainers(t *testing.T) {
	old := podtest.BoundPod()
	if !virtualPodChanged(old, withDebugContainer(old.DeepCopy(), "debugger")) {
		t.Error("adding an ephemeral container is dropped as no change")
	}
}

// withSysadminDebugContainer adds what kubectl debug --profile=sysadmin
// adds: a privileged container, reading the ConfigMap sysadmin-config.
func withSysadminDebugContainer(pod *corev1.Pod, name string) *corev1.Pod {
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
		TargetContainerName: "app",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1",
			Env:             []corev1.EnvVar{podtest.ConfigMapEnv("LEVEL", "sysadmin-config")},
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}},
	})
	return pod
}

// sentEphemeralContainers are the names of the ephemeral containers the
// patches sent to the physical pod.
func sentEphemeralContainers(t *testing.T, f *fixture) []string {
	t.Helper()
	var names []string
	for _, a := range actions(f.physicalKube, "patch", "pods/ephemeralcontainers") {
		var sent struct {
			Spec struct {
				EphemeralContainers []corev1.EphemeralContainer `json:"ephemeralContainers"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &sent); err != nil {
			t.Fatal(err)
		}
		for _, c := range sent.Spec.EphemeralContainers {
			names = append(names, c.Name)
		}
	}
	return names
}

// kubectl debug --profile=sysadmin against a baseline mount namespace: the
// privileged container is judged by the level before anything is sent, is
// neither added nor are its references copied, and the virtual pod says
// why, once (event and condition); a debug container within the level
// added beside it goes through. Once the level allows it, it is added.
func TestEphemeralContainerRefusedByPodSecurity(t *testing.T) {
	running := podtest.Mapped(podtest.BoundPod(), physicalUID)
	physical := physicalFor(running)
	physical.Status.Phase = corev1.PodRunning
	virtual := withDebugContainer(withSysadminDebugContainer(running.DeepCopy(), "sysadmin"), "plain")
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}, mountNamespace: namespaceAt("baseline")})

	f.mustReconcile()
	assertWrites(t, f, "virtual update pods/status", "physical patch pods/ephemeralcontainers")
	if sent := sentEphemeralContainers(t, f); !slices.Equal(sent, []string{"plain"}) {
		t.Errorf("sent %v, want plain alone", sent)
	}
	if slices.Contains(f.dependents.calls, "ConfigMap/"+virtualNS+"/sysadmin-config") {
		t.Errorf("copied %v: the refused container's ConfigMap among them", f.dependents.calls)
	}
	c := findCondition(f.virtualPod().Status.Conditions, kubeoceanv1alpha1.PodConditionEphemeralContainersAllowed)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != kubeoceanv1alpha1.ReasonPodSecurityViolation ||
		!strings.Contains(c.Message, `"sysadmin"`) || !strings.Contains(c.Message, "privileged") || strings.Contains(c.Message, `"plain"`) {
		t.Fatalf("condition = %+v, want False naming sysadmin alone", c)
	}
	if events := f.events(); len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+kubeoceanv1alpha1.ReasonPodSecurityViolation) || !strings.Contains(events[0], `"sysadmin"`) {
		t.Errorf("events = %v, want one Warning about sysadmin", events)
	}

	// Judged again on the next pass, reported no more.
	stored, err := f.physicalPod()
	if err != nil {
		t.Fatal(err)
	}
	f.syncCaches()
	f.cache("physicalPods", stored)
	f.mustReconcile()
	assertWrites(t, f)
	if events := f.events(); len(events) != 0 {
		t.Errorf("second pass: events %v", events)
	}

	// The physical admin lowers the level: it is added, and the
	// condition says so.
	f.cache("namespaces", namespaceAt("privileged"))
	if keys := f.controller.wakeRefused(); !slices.Contains(keys, podKey) {
		t.Errorf("woken %v, want %v among them", keys, podKey)
	}
	f.mustReconcile()
	if sent := sentEphemeralContainers(t, f); !slices.Equal(sent, []string{"sysadmin"}) {
		t.Errorf("sent %v, want sysadmin", sent)
	}
	if c := findCondition(f.virtualPod().Status.Conditions, kubeoceanv1alpha1.PodConditionEphemeralContainersAllowed); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("condition = %+v, want True", c)
	}
}
