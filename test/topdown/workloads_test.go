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

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// refusedPodCreates is the physical apiserver's count of pod creates it
// refused (403 or 422), from its own metrics: the create attempts that
// reached it and did not pass.
func refusedPodCreates(t *testing.T) int {
	t.Helper()
	requests, err := benchenv.ScrapeAPIServer(t.Context(), physicalCluster)
	if err != nil {
		t.Fatal(err)
	}
	return int(requests.Total(func(r benchenv.APIRequest) bool {
		return r.Resource == "pods" && r.Verb == "POST" && (r.Code == "403" || r.Code == "422")
	}))
}

// createdCondition waits until the virtual pod carries
// kubeocean.io/PhysicalPodCreated with status and reason, and returns it.
func waitCreatedCondition(t *testing.T, w *testenv.SyncerWorld, ns, name string, status corev1.ConditionStatus, reason string) (*corev1.Pod, *corev1.PodCondition) {
	t.Helper()
	var p *corev1.Pod
	var found *corev1.PodCondition
	testenv.WaitFor(t, 60*time.Second, fmt.Sprintf("%s/%s has %s=%s (%s)", ns, name, kubeoceanv1alpha1.PodConditionPhysicalPodCreated, status, reason), func(ctx context.Context) (bool, error) {
		var err error
		p, err = w.Virtual.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for i := range p.Status.Conditions {
			if c := &p.Status.Conditions[i]; c.Type == kubeoceanv1alpha1.PodConditionPhysicalPodCreated {
				found = c
				return c.Status == status && c.Reason == reason, fmt.Errorf("condition %+v", *c)
			}
		}
		return false, fmt.Errorf("no condition; node %q, phase %s", p.Spec.NodeName, p.Status.Phase)
	})
	return p, found
}

// eventsFor counts the events about the virtual pod with reason. The
// recorder writes them a moment after the condition they go with, so it
// waits up to 10 s for the first.
func eventsFor(t *testing.T, w *testenv.SyncerWorld, ns, name, reason string) int32 {
	t.Helper()
	var count int32
	for deadline := time.Now().Add(10 * time.Second); count == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		list, err := w.Virtual.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": name, "reason": reason}.String()})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range list.Items {
			count += max(e.Count, 1)
		}
	}
	return count
}

func physicalPodExists(t *testing.T, w *testenv.SyncerWorld, ns, name string) bool {
	t.Helper()
	_, err := w.Physical.CoreV1().Pods(w.Mount).Get(t.Context(), kubeoceanv1alpha1.PhysicalName(ns, name), metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// TestPodSecurityKeepsPhysicalNodesClosed: in a mount namespace labelled
// as shipped (Pod Security baseline), a privileged pod, a hostPath pod and
// a hostNetwork pod never exist in the physical cluster — the syncer does
// not even send them — and each virtual pod says why in its condition and
// one event; a plain pod beside them runs.
func TestPodSecurityKeepsPhysicalNodesClosed(t *testing.T) {
	w := lendNode(t, "psa", "cls-psa")
	ctx := t.Context()
	ns := "psa"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	refusedBefore := refusedPodCreates(t)

	escapes := map[string]struct {
		mutate func(*corev1.Pod)
		check  string
	}{
		"privileged": {func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, "privileged"},
		"hostpath": {func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "root", MountPath: "/host"}}
		}, "hostPath volumes"},
		"hostnetwork": {func(p *corev1.Pod) { p.Spec.HostNetwork = true }, "host namespaces"},
	}
	for name, e := range escapes {
		if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, workload(ns, name, "cls-psa", e.mutate), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, workload(ns, "plain", "cls-psa", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "the plain pod runs in the physical cluster", func(ctx context.Context) (bool, error) {
		return physicalPodExists(t, w, ns, "plain"), nil
	})

	versions := map[string]string{}
	for name, e := range escapes {
		p, c := waitCreatedCondition(t, w, ns, name, corev1.ConditionFalse, kubeoceanv1alpha1.ReasonPodSecurityViolation)
		if !strings.Contains(c.Message, `"baseline:latest"`) || !strings.Contains(c.Message, e.check) {
			t.Errorf("%s: condition message %q does not name baseline and %q", name, c.Message, e.check)
		}
		if p.Status.Phase != corev1.PodPending {
			t.Errorf("%s: phase %s, want Pending", name, p.Status.Phase)
		}
		versions[name] = p.ResourceVersion
	}
	// Resyncs and the mapping of the plain pod come and go; nothing is
	// sent again and nothing more is written.
	time.Sleep(5 * time.Second)
	for name := range escapes {
		if physicalPodExists(t, w, ns, name) {
			t.Errorf("%s: exists in the physical cluster", name)
		}
		if n := eventsFor(t, w, ns, name, kubeoceanv1alpha1.ReasonPodSecurityViolation); n != 1 {
			t.Errorf("%s: %d %s events, want 1", name, n, kubeoceanv1alpha1.ReasonPodSecurityViolation)
		}
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.ResourceVersion != versions[name] {
			t.Errorf("%s: written again (resourceVersion %s → %s)", name, versions[name], p.ResourceVersion)
		}
	}
	refused := refusedPodCreates(t) - refusedBefore
	t.Logf("pod creates the physical apiserver refused: %d", refused)
	if refused != 0 {
		t.Errorf("the physical apiserver refused %d pod creates; want 0: the syncer sends no pod that breaks the level", refused)
	}

	// The physical admin trusts this virtual cluster after all: a change
	// of the mount namespace's labels is what brings the pods back.
	if _, err := w.Physical.CoreV1().Namespaces().Patch(ctx, w.Mount, types.MergePatchType,
		[]byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	for name := range escapes {
		waitCreatedCondition(t, w, ns, name, corev1.ConditionTrue, kubeoceanv1alpha1.ReasonPhysicalPodCreated)
		if !physicalPodExists(t, w, ns, name) {
			t.Errorf("%s: not in the physical cluster once the level allows it", name)
		}
	}
}

// TestQuotaRefusalShowsAndRetriesOnQuotaChange: a pod the mount
// namespace's ResourceQuota refuses stays Pending with the physical
// apiserver's message in its condition and one event, is not sent again
// while nothing changes, and is created once the quota is raised.
func TestQuotaRefusalShowsAndRetriesOnQuotaChange(t *testing.T) {
	w := lendNode(t, "quota", "cls-quota")
	ctx := t.Context()
	ns := "quota"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)

	// No quota controller runs in the physical cluster: the test keeps
	// the quota's status as it would.
	quotas := w.Physical.CoreV1().ResourceQuotas(w.Mount)
	setPods := func(limit string) {
		t.Helper()
		q, err := quotas.Get(ctx, "pods", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			q, err = quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "pods"},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(limit)}}}, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
		q.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(limit)}
		q.Status.Hard = q.Spec.Hard
		if q.Status.Used == nil {
			q.Status.Used = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
		}
		if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setPods("0")
	refusedBefore := refusedPodCreates(t)

	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, workload(ns, "app", "cls-quota", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, c := waitCreatedCondition(t, w, ns, "app", corev1.ConditionFalse, kubeoceanv1alpha1.ReasonPhysicalPodRejected)
	if !strings.Contains(c.Message, "exceeded quota: pods") {
		t.Errorf("condition message %q does not carry the physical refusal", c.Message)
	}
	blocked := refusedPodCreates(t) - refusedBefore
	time.Sleep(10 * time.Second)
	later := refusedPodCreates(t) - refusedBefore
	t.Logf("refused pod creates: %d when the condition showed, %d ten seconds later", blocked, later)
	if blocked < 1 || later != blocked {
		t.Errorf("refused creates %d then %d; want at least one, and none more while nothing changes", blocked, later)
	}
	if physicalPodExists(t, w, ns, "app") {
		t.Fatal("the refused pod exists in the physical cluster")
	}
	if n := eventsFor(t, w, ns, "app", kubeoceanv1alpha1.ReasonPhysicalPodRejected); n != 1 {
		t.Errorf("%d %s events, want 1", n, kubeoceanv1alpha1.ReasonPhysicalPodRejected)
	}

	setPods("5")
	testenv.WaitFor(t, 30*time.Second, "the pod is created once the quota allows it", func(ctx context.Context) (bool, error) {
		return physicalPodExists(t, w, ns, "app"), nil
	})
	waitCreatedCondition(t, w, ns, "app", corev1.ConditionTrue, kubeoceanv1alpha1.ReasonPhysicalPodCreated)
	t.Logf("refused pod creates in all: %d", refusedPodCreates(t)-refusedBefore)
}

// TestDaemonSetPodsStayOffPhysicalCluster: a DaemonSet tolerating every
// taint gets a pod on the virtual node; the pod stays Pending with a
// condition saying why, no physical pod appears, and the pod is neither
// rewritten nor replaced by the DaemonSet controller.
func TestDaemonSetPodsStayOffPhysicalCluster(t *testing.T) {
	w := lendNode(t, "ds", "cls-ds")
	ctx := t.Context()
	ns := "ds"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)

	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Only this binding's virtual node: others in the
					// shared virtual cluster have no syncer running.
					NodeSelector: map[string]string{kubeoceanv1alpha1.LabelClusterID: "cls-ds"},
					Tolerations:  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					Containers:   []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
	if _, err := w.Virtual.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var agent *corev1.Pod
	testenv.WaitFor(t, 60*time.Second, "the DaemonSet's pod is bound to the virtual node", func(ctx context.Context) (bool, error) {
		list, err := w.Virtual.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		agent = &list.Items[0]
		return len(list.Items) == 1 && agent.Spec.NodeName == w.VirtualNode("ds-node"), fmt.Errorf("%d pods, first on %q", len(list.Items), agent.Spec.NodeName)
	})
	agent, c := waitCreatedCondition(t, w, ns, agent.Name, corev1.ConditionFalse, kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced)
	if !strings.Contains(c.Message, "--sync-daemonset-pods") {
		t.Errorf("condition message %q does not say how to allow it", c.Message)
	}

	// Watched for a while: nothing in the physical mount namespace, the
	// same pod, not written again.
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		physical, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(physical.Items) != 0 {
			t.Fatalf("physical pods in the mount namespace: %s", physical.Items[0].Name)
		}
		time.Sleep(time.Second)
	}
	list, err := w.Virtual.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].UID != agent.UID || list.Items[0].ResourceVersion != agent.ResourceVersion {
		t.Fatalf("after 30 s: %d pods; want the same pod %s at resourceVersion %s", len(list.Items), agent.UID, agent.ResourceVersion)
	}
	if p := list.Items[0]; p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if n := eventsFor(t, w, ns, agent.Name, kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced); n != 1 {
		t.Errorf("%d %s events, want 1", n, kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced)
	}
}
