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

package topdown

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// physicalEphemeralContainerRequests is the physical apiserver's count of
// requests to pods/ephemeralcontainers, whatever their verb and answer,
// from its own metrics.
func physicalEphemeralContainerRequests(t *testing.T) int {
	t.Helper()
	requests, err := benchenv.ScrapeAPIServer(t.Context(), physicalCluster)
	if err != nil {
		t.Fatal(err)
	}
	return int(requests.Total(func(r benchenv.APIRequest) bool { return r.Resource == "pods/ephemeralcontainers" }))
}

// addDebugContainer does what kubectl debug does to the virtual pod.
func addDebugContainer(t *testing.T, w *testenv.SyncerWorld, ns, name string, c corev1.EphemeralContainer) {
	t.Helper()
	virtual, err := w.Virtual.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	virtual.Spec.EphemeralContainers = append(virtual.Spec.EphemeralContainers, c)
	if _, err := w.Virtual.CoreV1().Pods(ns).UpdateEphemeralContainers(t.Context(), name, virtual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestKubectlDebugSysadminRefusedAtBaseline: kubectl debug
// --profile=sysadmin adds a privileged ephemeral container; against the
// mount namespace's baseline level the syncer refuses it before sending
// anything (the physical apiserver sees no pods/ephemeralcontainers
// request), and the virtual pod says why in a condition and one event. A
// general-profile debug container added next is sent: the count moves.
func TestKubectlDebugSysadminRefusedAtBaseline(t *testing.T) {
	w := lendNode(t, "debugpsa", "cls-debugpsa")
	ctx := t.Context()
	ns := "debugpsa"
	testenv.CreateNamespace(t, w.Virtual, ns)
	web := workload(ns, "web", w.ClusterID, func(p *corev1.Pod) {
		p.Spec.NodeName = w.VirtualNode(w.Binding + "-node")
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, web, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "the virtual pod runs", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Errorf("phase %s", p.Status.Phase)
	})

	before := physicalEphemeralContainerRequests(t)
	addDebugContainer(t, w, ns, "web", corev1.EphemeralContainer{
		TargetContainerName: "app",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger-sysadmin", Image: "busybox:1.36", Stdin: true, TTY: true,
			SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
		},
	})
	var condition corev1.PodCondition
	testenv.WaitFor(t, 60*time.Second, "the virtual pod says the debug container is refused", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == kubeoceanv1alpha1.PodConditionEphemeralContainersAllowed {
				condition = c
				return c.Status == corev1.ConditionFalse, fmt.Errorf("condition %+v", c)
			}
		}
		return false, fmt.Errorf("no condition")
	})
	for _, want := range []string{`"debugger-sysadmin"`, "privileged", "baseline"} {
		if !strings.Contains(condition.Message, want) {
			t.Errorf("condition message %q does not say %s", condition.Message, want)
		}
	}
	// Resyncs come and go; nothing is sent, and it is said once.
	time.Sleep(5 * time.Second)
	if n := physicalEphemeralContainerRequests(t) - before; n != 0 {
		t.Errorf("%d pods/ephemeralcontainers requests reached the physical apiserver, want 0", n)
	}
	if n := eventsFor(t, w, ns, "web", kubeoceanv1alpha1.ReasonPodSecurityViolation); n != 1 {
		t.Errorf("%d %s events, want 1", n, kubeoceanv1alpha1.ReasonPodSecurityViolation)
	}

	addDebugContainer(t, w, ns, "web", corev1.EphemeralContainer{
		TargetContainerName:      "app",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox:1.36", Stdin: true, TTY: true},
	})
	physical := waitPhysicalPod(t, w, ns, "web", "the general debug container reaches the physical pod", func(p *corev1.Pod) (bool, error) {
		return len(p.Spec.EphemeralContainers) > 0, fmt.Errorf("no ephemeral containers")
	})
	if got := physical.Spec.EphemeralContainers; len(got) != 1 || got[0].Name != "debugger" {
		t.Errorf("physical ephemeral containers %+v, want debugger alone", got)
	}
	if n := physicalEphemeralContainerRequests(t) - before; n != 1 {
		t.Errorf("%d pods/ephemeralcontainers requests after the general container, want 1", n)
	}
}
