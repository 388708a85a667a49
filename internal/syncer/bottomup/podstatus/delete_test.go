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

package podstatus

import (
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
)

func withAnnotation(pod *corev1.Pod, key, value string) *corev1.Pod {
	if value == "" {
		delete(pod.Annotations, key)
	} else {
		pod.Annotations[key] = value
	}
	return pod
}

func withUID(pod *corev1.Pod, uid types.UID) *corev1.Pod {
	pod.UID = uid
	return pod
}

func terminating(pod *corev1.Pod) *corev1.Pod {
	pod.DeletionTimestamp = &metav1.Time{Time: now}
	return pod
}

func pods(p ...*corev1.Pod) []*corev1.Pod { return p }

// TestReconcileDeletes covers every way a physical pod can lose its virtual
// pod, and the look-alikes that must not cost it.
func TestReconcileDeletes(t *testing.T) {
	pointsElsewhere := withAnnotation(syncedVirtualPod(), kubeoceanv1alpha1.AnnotationPhysicalPodName, "other-pod")
	tests := []struct {
		name         string
		physical     *corev1.Pod
		cached, live []*corev1.Pod
		wantVirtual  []string // virtual cluster actions
		wantDelete   bool
		wantEvent    string // reason of the event on the physical pod
	}{
		{
			name:       "missing virtual-pod-uid annotation",
			physical:   withAnnotation(physicalPod(), kubeoceanv1alpha1.AnnotationVirtualPodUID, ""),
			cached:     pods(syncedVirtualPod()),
			live:       pods(syncedVirtualPod()),
			wantDelete: true, wantEvent: kubeoceanv1alpha1.ReasonMissingVirtualPodMapping,
		},
		{
			name:     "missing annotations on a pod already terminating",
			physical: terminating(withAnnotation(physicalPod(), kubeoceanv1alpha1.AnnotationVirtualPodName, "")),
		},
		{
			name:        "cache miss confirmed by a live NotFound",
			physical:    physicalPod(),
			wantVirtual: []string{"get pods"},
			wantDelete:  true, wantEvent: kubeoceanv1alpha1.ReasonVirtualPodGone,
		},
		{
			name:        "cache miss, but the live pod exists",
			physical:    physicalPod(),
			live:        pods(syncedVirtualPod()),
			wantVirtual: []string{"get pods"},
		},
		{
			name:        "UID mismatch in cache and live",
			physical:    physicalPod(),
			cached:      pods(withUID(syncedVirtualPod(), "recreated")),
			live:        pods(withUID(syncedVirtualPod(), "recreated")),
			wantVirtual: []string{"get pods"},
			wantDelete:  true, wantEvent: kubeoceanv1alpha1.ReasonVirtualPodGone,
		},
		{
			name:        "UID mismatch only in a stale cache",
			physical:    physicalPod(),
			cached:      pods(withUID(syncedVirtualPod(), "previous")),
			live:        pods(syncedVirtualPod()),
			wantVirtual: []string{"get pods"},
		},
		{
			name:        "virtual pod maps to another physical pod",
			physical:    physicalPod(),
			cached:      pods(pointsElsewhere),
			live:        pods(pointsElsewhere),
			wantVirtual: []string{"get pods"},
			wantDelete:  true, wantEvent: kubeoceanv1alpha1.ReasonVirtualPodGone,
		},
		{
			name:     "virtual pod maps to no physical pod",
			physical: physicalPod(),
			cached:   pods(withAnnotation(syncedVirtualPod(), kubeoceanv1alpha1.AnnotationPhysicalPodNamespace, "")),
			live:     pods(withAnnotation(syncedVirtualPod(), kubeoceanv1alpha1.AnnotationPhysicalPodNamespace, "")),
			// A cache behind the top-down syncer's annotation is ruled out
			// by the live GET.
			wantVirtual: []string{"get pods"},
			wantDelete:  true, wantEvent: kubeoceanv1alpha1.ReasonVirtualPodGone,
		},
		{
			name:        "mapping annotations only missing from a stale cache",
			physical:    physicalPod(),
			cached:      pods(withAnnotation(virtualPod(), kubeoceanv1alpha1.AnnotationPhysicalPodName, "")),
			live:        pods(syncedVirtualPod()),
			wantVirtual: []string{"get pods"},
		},
		{
			name:        "virtual pod gone while the physical pod is terminating",
			physical:    terminating(physicalPod()),
			wantVirtual: []string{"get pods"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, pods(tt.physical), tt.cached, tt.live)
			if err := f.reconcile(t); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if got := fixtures.Verbs(f.virtualKube.Actions()); !slices.Equal(got, tt.wantVirtual) {
				t.Errorf("virtual actions = %v, want %v", got, tt.wantVirtual)
			}
			assertDeleted(t, f.physicalKube.Actions(), tt.wantDelete)
			events := fixtures.Events(f.recorder)
			switch {
			case tt.wantEvent == "" && len(events) > 0:
				t.Errorf("unexpected events %v", events)
			case tt.wantEvent != "" && (len(events) != 1 || !strings.Contains(events[0], tt.wantEvent)):
				t.Errorf("events = %v, want one %s", events, tt.wantEvent)
			}
		})
	}
}

// assertDeleted checks the physical actions are exactly one delete of the
// physical pod with a UID precondition, or none at all.
func assertDeleted(t *testing.T, actions []clienttesting.Action, want bool) {
	t.Helper()
	if !want {
		if len(actions) != 0 {
			t.Errorf("physical actions = %v, want none", fixtures.Verbs(actions))
		}
		return
	}
	if len(actions) != 1 || actions[0].GetVerb() != "delete" {
		t.Fatalf("physical actions = %v, want one delete", fixtures.Verbs(actions))
	}
	del := actions[0].(clienttesting.DeleteAction)
	if del.GetName() != physicalName || del.GetNamespace() != mountNS {
		t.Errorf("deleted %s/%s, want %s/%s", del.GetNamespace(), del.GetName(), mountNS, physicalName)
	}
	pre := del.GetDeleteOptions().Preconditions
	if pre == nil || pre.UID == nil || *pre.UID != physicalUID {
		t.Errorf("delete preconditions = %+v, want UID %s", pre, physicalUID)
	}
}

func TestReconcileIgnores(t *testing.T) {
	unlabelled := physicalPod()
	unlabelled.Labels = nil
	elsewhere := physicalPod()
	elsewhere.Namespace = "other"
	// Another virtual cluster binds the same physical cluster with the
	// same cluster ID and mount namespace: its pod names a virtual pod we
	// do not have, so it looks orphaned, but it is not ours to delete.
	otherBinding := physicalPod()
	otherBinding.Labels = ownership.Owner{ClusterID: testClusterID, BindingUID: "other-binding-uid"}.Stamp(nil)
	// Made by an older version, without a binding identity: not provably
	// ours, so never deleted here.
	legacy := physicalPod()
	legacy.Labels = map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	tests := []struct {
		name     string
		physical []*corev1.Pod
	}{
		{name: "physical pod gone"},
		{name: "not managed by Kubeocean", physical: pods(unlabelled)},
		// The key names the mount namespace; a same-named pod elsewhere
		// is not what it refers to.
		{name: "outside the mount namespace", physical: pods(elsewhere)},
		{name: "another binding's pod in the same namespace", physical: pods(otherBinding)},
		{name: "an older version's pod without identity", physical: pods(legacy)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.physical, nil, nil)
			if err := f.reconcile(t); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if all := append(f.physicalKube.Actions(), f.virtualKube.Actions()...); len(all) != 0 {
				t.Errorf("actions = %v, want none", fixtures.Verbs(all))
			}
		})
	}
}

func TestReconcileUnreachableVirtualClusterNeverDeletes(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"connection refused", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")},
		{"server error", apierrors.NewInternalError(errors.New("etcd is down"))},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, virtualName, errors.New("no"))},
		// A 404 that is not the apiserver's answer about this pod, e.g.
		// from a proxy, is no proof the pod is gone.
		{"bare 404", apierrors.NewGenericServerResponse(404, "GET", schema.GroupResource{Resource: "pods"}, virtualName, "", 0, true)},
		{"NotFound of something else", apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, virtualNS)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, pods(physicalPod()), nil, nil)
			f.virtualKube.PrependReactor("get", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			if err := f.reconcile(t); err == nil {
				t.Fatal("reconcile succeeded, want the error so the key is retried")
			}
			assertDeleted(t, f.physicalKube.Actions(), false)
			if events := fixtures.Events(f.recorder); len(events) > 0 {
				t.Errorf("unexpected events %v", events)
			}
		})
	}
}

func TestReconcileDeleteRaces(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"already gone", apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, physicalName)},
		{"replaced by a pod with another UID", apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, physicalName, errors.New("precondition failed"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, pods(physicalPod()), nil, nil)
			f.physicalKube.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, tt.err
			})
			if err := f.reconcile(t); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			if events := fixtures.Events(f.recorder); len(events) > 0 {
				t.Errorf("no pod was deleted, yet events %v", events)
			}
		})
	}

	t.Run("delete fails", func(t *testing.T) {
		f := newFixture(t, pods(physicalPod()), nil, nil)
		f.physicalKube.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("busy")
		})
		if err := f.reconcile(t); err == nil {
			t.Fatal("reconcile succeeded, want the error so the key is retried")
		}
	})
}
