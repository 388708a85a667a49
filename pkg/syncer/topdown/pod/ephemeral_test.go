package pod

import (
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

func withDebugContainer(pod *corev1.Pod, name string) *corev1.Pod {
	pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, corev1.EphemeralContainer{
		TargetContainerName: "app",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name, Image: "busybox:1",
			Env: []corev1.EnvVar{configMapEnv("LEVEL", "debug-config"), fieldEnv("SA", "spec.serviceAccountName")},
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
	running := mapped(boundPod(), physicalUID)
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
	if got := c.Env[0].ValueFrom.ConfigMapKeyRef.Name; got != pn("debug-config") {
		t.Errorf("env names ConfigMap %q, want its copy %q", got, pn("debug-config"))
	}
	if got := c.Env[1]; got.ValueFrom != nil || got.Value != "builder" {
		t.Errorf("service account env %+v, want the virtual value builder", got)
	}
	if got := c.EnvFrom[0].SecretRef.Name; got != pn("debug-creds") {
		t.Errorf("envFrom names Secret %q, want its copy %q", got, pn("debug-creds"))
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
	virtual := withDebugContainer(mapped(boundPod(), physicalUID), "debugger")
	physical := physicalFor(virtual)
	physical.Status.Phase = corev1.PodPending
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}})
	f.mustReconcile()
	assertWrites(t, f)
}

func TestVirtualPodChangedByEphemeralContainers(t *testing.T) {
	old := boundPod()
	if !virtualPodChanged(old, withDebugContainer(old.DeepCopy(), "debugger")) {
		t.Error("adding an ephemeral container is dropped as no change")
	}
}
