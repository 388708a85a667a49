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
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

func createdCondition(pod *corev1.Pod) *corev1.PodCondition {
	return findCondition(pod.Status.Conditions, kubeoceanv1alpha1.PodConditionPhysicalPodCreated)
}

func namespaceAt(level string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mountNS}}
	if level != "" {
		ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": level, "pod-security.kubernetes.io/enforce-version": "latest"}
	}
	return ns
}

func quotaRefusal() error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, physicalName,
		errorString("exceeded quota: pods, requested: pods=1, used: pods=0, limited: pods=0"))
}

type errorString string

func (e errorString) Error() string { return string(e) }

// A pod the physical apiserver refuses shows why on the virtual pod, once,
// and is not sent again until it changes or the mount namespace or its
// quotas do.
func TestPhysicalPodRefused(t *testing.T) {
	for name, refusal := range map[string]error{"quota": quotaRefusal(), "validation": invalidPod()} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}})
			creates := 0
			f.react(f.physicalKube, "create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				creates++
				return true, nil, refusal
			})
			if _, err := f.reconcile(); err != nil {
				t.Fatalf("reconcile: %v, want none (the refusal is shown, not retried)", err)
			}
			c := createdCondition(f.virtualPod())
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != kubeoceanv1alpha1.ReasonPhysicalPodRejected || !strings.Contains(c.Message, refusal.Error()) {
				t.Fatalf("condition = %+v, want False %s with the physical message", c, kubeoceanv1alpha1.ReasonPhysicalPodRejected)
			}
			if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "Warning "+kubeoceanv1alpha1.ReasonPhysicalPodRejected) {
				t.Errorf("events = %v, want one Warning %s", events, kubeoceanv1alpha1.ReasonPhysicalPodRejected)
			}

			// The condition's own write and resyncs bring the pod back:
			// nothing is sent, nothing written.
			f.syncCaches()
			f.takeWrites()
			f.mustReconcile()
			if w := f.takeWrites(); len(w) != 0 || creates != 1 {
				t.Errorf("unchanged refused pod: writes %v, %d creates; want none and 1", w, creates)
			}

			// A wake-up (quota or namespace labels changed) sends it
			// again; the same refusal adds no event and no write.
			if keys := f.controller.wakeRefused(); len(keys) != 1 || keys[0] != podKey {
				t.Errorf("woken = %v, want %v", keys, podKey)
			}
			f.mustReconcile()
			if creates != 2 {
				t.Errorf("creates after a wake-up = %d, want 2", creates)
			}
			if events := f.events(); len(events) != 0 {
				t.Errorf("events on the same refusal = %v, want none", events)
			}

			// A change of the pod sends it again too.
			pod := f.virtualPod()
			pod.Labels["tier"] = "web"
			if _, err := f.virtualKube.CoreV1().Pods(virtualNS).Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.syncCaches()
			f.mustReconcile()
			if creates != 3 {
				t.Errorf("creates after a change of the pod = %d, want 3", creates)
			}
		})
	}
}

// Once the physical pod is created after a refusal, the condition turns
// True.
func TestRefusedThenCreated(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}})
	refuse := true
	f.react(f.physicalKube, "create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if refuse {
			return true, nil, quotaRefusal()
		}
		return false, nil, nil
	})
	f.mustReconcile()
	refuse = false
	f.syncCaches()
	f.controller.wakeRefused()
	f.mustReconcile()
	if _, err := f.physicalPod(); err != nil {
		t.Fatalf("physical pod: %v", err)
	}
	f.syncCaches()
	f.mustReconcile()
	if c := createdCondition(f.virtualPod()); c == nil || c.Status != corev1.ConditionTrue || c.Reason != kubeoceanv1alpha1.ReasonPhysicalPodCreated {
		t.Errorf("condition = %+v, want True %s", c, kubeoceanv1alpha1.ReasonPhysicalPodCreated)
	}
}

// The syncer's own lack of permission is not the pod's fault: retried with
// backoff, nothing on the pod.
func TestCreateForbiddenByRBACIsRetried(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}})
	f.react(f.physicalKube, "create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
			errorString(`User "system:serviceaccount:kubeocean-system:kubeocean-syncer" cannot create resource "pods" in API group "" in the namespace "mount"`))
	})
	if _, err := f.reconcile(); err == nil || controller.IsTerminal(err) {
		t.Fatalf("error = %v, want one retried with backoff", err)
	}
	if c := createdCondition(f.virtualPod()); c != nil {
		t.Errorf("condition = %+v, want none", c)
	}
}

// A pod that breaks the mount namespace's Pod Security level is never
// sent; the condition names the checks it fails.
func TestPodSecurity(t *testing.T) {
	tests := []struct {
		name   string
		level  string
		mutate func(*corev1.Pod)
		// want are the words of the violation; none: the pod is created.
		want []string
	}{
		{name: "privileged at baseline", level: "baseline", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}, want: []string{`"baseline:latest"`, "privileged", `container "app"`}},
		{name: "hostPath at baseline", level: "baseline", mutate: func(p *corev1.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}, want: []string{"hostPath volumes", `"root"`}},
		{name: "hostNetwork at baseline", level: "baseline", mutate: func(p *corev1.Pod) { p.Spec.HostNetwork = true },
			want: []string{"host namespaces", "hostNetwork=true"}},
		{name: "added capability at baseline", level: "baseline", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		}, want: []string{"non-default capabilities", "SYS_ADMIN"}},
		{name: "plain pod at baseline", level: "baseline"},
		{name: "hardened pod at restricted", level: "restricted", mutate: func(p *corev1.Pod) {
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
		}},
		{name: "plain pod at restricted", level: "restricted", want: []string{`"restricted:latest"`, "allowPrivilegeEscalation", "runAsNonRoot", "seccompProfile"}},
		{name: "privileged without a label", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}},
		{name: "privileged at privileged", level: "privileged", mutate: func(p *corev1.Pod) { p.Spec.HostPID = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := podtest.BoundPod()
			if tt.mutate != nil {
				tt.mutate(pod)
			}
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{pod}, mountNamespace: namespaceAt(tt.level)})
			f.mustReconcile()
			creates := len(actions(f.physicalKube, "create", "pods"))
			c := createdCondition(f.virtualPod())
			if len(tt.want) == 0 {
				if c != nil || creates != 1 {
					t.Fatalf("condition %+v, %d creates; want none and 1", c, creates)
				}
				return
			}
			if w := f.takeWrites(); len(w) != 1 || w[0] != "virtual update pods/status" {
				t.Errorf("writes = %v, want only the condition: nothing sent to the physical cluster, no mapping recorded", w)
			}
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != kubeoceanv1alpha1.ReasonPodSecurityViolation {
				t.Fatalf("condition = %+v, want False %s", c, kubeoceanv1alpha1.ReasonPodSecurityViolation)
			}
			for _, w := range tt.want {
				if !strings.Contains(c.Message, w) {
					t.Errorf("message %q does not say %q", c.Message, w)
				}
			}
			if events := f.events(); len(events) != 1 || !strings.Contains(events[0], kubeoceanv1alpha1.ReasonPodSecurityViolation) {
				t.Errorf("events = %v, want one %s", events, kubeoceanv1alpha1.ReasonPodSecurityViolation)
			}
			f.syncCaches()
			f.mustReconcile()
			if w := f.takeWrites(); len(w) != 0 {
				t.Errorf("second pass wrote %v, want nothing", w)
			}

			// The physical admin lowers the level: the pod goes through.
			f.cache("namespaces", namespaceAt("privileged"))
			f.controller.wakeRefused()
			f.mustReconcile()
			if creates := len(actions(f.physicalKube, "create", "pods")); creates != 1 {
				t.Errorf("creates once the level allows the pod = %d, want 1", creates)
			}
		})
	}
}

func daemonSetPod() *corev1.Pod {
	pod := podtest.BoundPod()
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "ds-uid", Controller: ptr.To(true)}}
	return pod
}

// A DaemonSet's pod stays Pending with a condition saying why, written
// once; with SyncDaemonSetPods it runs.
func TestDaemonSetPod(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{daemonSetPod()}})
	f.mustReconcile()
	if w := f.takeWrites(); len(w) != 1 || w[0] != "virtual update pods/status" {
		t.Errorf("writes = %v, want only the condition", w)
	}
	c := createdCondition(f.virtualPod())
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced || !strings.Contains(c.Message, "--sync-daemonset-pods") {
		t.Fatalf("condition = %+v, want False %s", c, kubeoceanv1alpha1.ReasonDaemonSetPodNotSynced)
	}
	if events := f.events(); len(events) != 1 {
		t.Errorf("events = %v, want one", events)
	}
	for range 3 {
		f.syncCaches()
		f.mustReconcile()
	}
	if w := f.takeWrites(); len(w) != 0 {
		t.Errorf("later passes wrote %v, want nothing", w)
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("later events = %v, want none", events)
	}

	allowed := newFixture(t, seed{virtualPods: []*corev1.Pod{daemonSetPod()}, syncDaemonSetPods: true})
	allowed.mustReconcile()
	if creates := len(actions(allowed.physicalKube, "create", "pods")); creates != 1 {
		t.Errorf("creates with SyncDaemonSetPods = %d, want 1", creates)
	}
}

func TestIsRefusal(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{invalidPod(), true},
		{quotaRefusal(), true},
		{apierrors.NewForbidden(gr, "x", errorString(`violates PodSecurity "baseline:latest": privileged`)), true},
		{apierrors.NewForbidden(gr, "", errorString(`User "u" cannot create resource "pods" in API group "" in the namespace "m"`)), false},
		{apierrors.NewServiceUnavailable("down"), false},
		{apierrors.NewConflict(gr, "x", errorString("changed")), false},
	} {
		if got := isRefusal(tt.err); got != tt.want {
			t.Errorf("isRefusal(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func TestQuotaMayAdmitMore(t *testing.T) {
	quota := func(hard, used string) *corev1.ResourceQuota {
		return &corev1.ResourceQuota{
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(hard)}},
			Status: corev1.ResourceQuotaStatus{
				Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(hard)},
				Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse(used)},
			},
		}
	}
	for _, tt := range []struct {
		name     string
		old, new *corev1.ResourceQuota
		want     bool
	}{
		{"limit raised", quota("5", "5"), quota("6", "5"), true},
		{"limit lowered", quota("5", "3"), quota("4", "3"), true},
		{"a pod finished", quota("5", "5"), quota("5", "4"), true},
		{"a pod created", quota("5", "4"), quota("5", "5"), false},
		{"nothing", quota("5", "4"), quota("5", "4"), false},
	} {
		if got := quotaMayAdmitMore(tt.old, tt.new); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A physical admission webhook that answers 500 fails the create again
// and again: it backs off with the controller's rate limiter (up to
// minutes), not every 5 s as an apiserver that does not answer. An
// apiserver's own 500 still counts as unavailable.
func TestCreateFailedByWebhookBacksOff(t *testing.T) {
	for _, tc := range []struct {
		name        string
		err         error
		unavailable bool
	}{
		{"webhook failed", apierrors.NewInternalError(errorString(`failed calling webhook "validate.example.com": the server returned 500`)), false},
		{"apiserver's own 500", apierrors.NewInternalError(errorString("etcdserver: request timed out")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}})
			f.react(f.physicalKube, "create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tc.err
			})
			_, err := f.reconcile()
			if err == nil || controller.IsTerminal(err) {
				t.Fatalf("error = %v, want one retried", err)
			}
			if got := controller.Unavailable(err); got != tc.unavailable {
				t.Errorf("Unavailable(%v) = %v, want %v", err, got, tc.unavailable)
			}
		})
	}
}
