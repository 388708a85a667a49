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
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podspec"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// withTokenVolume adds the volume the ServiceAccount admission plugin
// injects.
func withTokenVolume(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.ServiceAccountName = "default"
	pod.Spec.Volumes = append(pod.Spec.Volumes, podtest.ProjectedVolume("kube-api-access-x1y2z", ptr.To[int32](0o644),
		corev1.VolumeProjection{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
		corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: references.RootCAConfigMap},
			Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		corev1.VolumeProjection{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
	))
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-x1y2z", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	return pod
}

// tokenSecret is the token Secret of withTokenVolume(podtest.BoundPod()) issued for
// uid, due at refreshAt.
func tokenSecret(uid types.UID, refreshAt time.Time) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: podidentity.SecretName(physicalName), UID: "secret-uid", ResourceVersion: "5",
			Labels: testOwner.Stamp(map[string]string{kubeoceanv1alpha1.LabelPodToken: "true"}),
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: virtualNS,
				kubeoceanv1alpha1.AnnotationVirtualPodName:      virtualName,
				kubeoceanv1alpha1.AnnotationVirtualPodUID:       string(uid),
				kubeoceanv1alpha1.AnnotationTokenRefreshAt:      refreshAt.Format(time.RFC3339),
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"token": []byte("old"), "ca.crt": []byte("virtual-ca"), "metadata.namespace": []byte(virtualNS)},
	}
}

func assertWrites(t *testing.T, f *fixture, want ...string) {
	t.Helper()
	if got := f.takeWrites(); !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
}

// assertCreatedWithToken checks the writes of a new pod with a token: the
// TokenRequest, the Secret holding it, then the physical pod, and nothing
// written to the virtual pod (the bottom-up side records the mapping with
// its first status write).
func assertCreatedWithToken(t *testing.T, f *fixture) {
	t.Helper()
	got := f.takeWrites()
	want := []string{"virtual create serviceaccounts/token", "physical create secrets", "physical create pods"}
	if !slices.Equal(got, want) {
		t.Errorf("writes = %q, want %q", got, want)
	}
}

// TestCreate follows a new virtual pod: the token Secret is made, then the
// physical pod is created, with nothing written to the virtual pod; and
// reconciling again — also once the bottom-up side recorded the mapping
// and the physical UID — writes nothing.
func TestCreate(t *testing.T) {
	virtual := withTokenVolume(podtest.BoundPod())
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, apiServer: "10.0.0.1:6443"})
	result := f.mustReconcile()
	assertCreatedWithToken(t, f)
	if result.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %v after create, want 0 (the physical pod's event comes)", result.RequeueAfter)
	}

	if want := []string{"ConfigMap/team-a/config", "Secret/team-a/creds"}; !slices.Equal(f.dependents.calls, want) {
		t.Errorf("dependents calls = %v, want %v", f.dependents.calls, want)
	}

	created := actions(f.physicalKube, "create", "pods")[0].(clienttesting.CreateAction).GetObject().(*corev1.Pod)
	apiServer, _ := podspec.ParseAPIServer("10.0.0.1:6443")
	want := podspec.PhysicalPod(f.virtualPod(), podspec.Translation{MountNamespace: mountNS, Owner: testOwner, PhysicalName: physicalName, PhysicalNode: physicalNode,
		Names: resolvedNames(virtual), Plan: podidentity.PlanFor(virtual), APIServer: apiServer})
	if !equality.Semantic.DeepEqual(created, want) {
		t.Errorf("created pod (-want +got):\n%s", diff.Diff(want, created))
	}

	secret, err := f.physicalKube.CoreV1().Secrets(mountNS).Get(context.Background(), podidentity.SecretName(physicalName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	refreshAt := now.Add(3600 * time.Second * 8 / 10)
	wantData := map[string][]byte{"token": []byte("token-1"), "ca.crt": []byte("virtual-ca"), "metadata.namespace": []byte(virtualNS)}
	if !reflect.DeepEqual(secret.Data, wantData) || secret.Labels[kubeoceanv1alpha1.LabelPodToken] != "true" ||
		!testOwner.Owns(secret) ||
		secret.Annotations[kubeoceanv1alpha1.AnnotationTokenRefreshAt] != refreshAt.Format(time.RFC3339) ||
		secret.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(virtualUID) {
		t.Errorf("token Secret = %+v", secret)
	}
	request := actions(f.virtualKube, "create", "serviceaccounts/token")[0].(clienttesting.CreateActionImpl)
	bound := request.GetObject().(*authenticationv1.TokenRequest).Spec.BoundObjectRef
	if request.GetNamespace() != virtualNS || request.Name != "default" || bound == nil ||
		bound.Kind != "Pod" || bound.Name != virtualName || bound.UID != virtualUID {
		t.Errorf("token requested for %s/%s bound to %+v, want team-a/default bound to the virtual pod", request.GetNamespace(), request.Name, bound)
	}

	// The caches catch up: nothing more to write, the token is due later.
	f.syncCaches()
	// The Secret keeps the time to the second.
	if result, want := f.mustReconcile(), refreshAt.Truncate(time.Second).Sub(now); result.RequeueAfter != want {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, want)
	}
	assertWrites(t, f)

	// The bottom-up side records the mapping and the physical UID: still
	// nothing.
	if _, err := f.virtualKube.CoreV1().Pods(virtualNS).Patch(context.Background(), virtualName, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"kubeocean.io/physical-pod-namespace":"`+mountNS+`","kubeocean.io/physical-pod-name":"`+physicalName+`","kubeocean.io/physical-pod-uid":"physical-uid","kubeocean.io/last-sync-time":"2026-03-04T05:06:07Z"}}}`),
		metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	f.syncCaches()
	f.takeWrites()
	f.mustReconcile()
	assertWrites(t, f)
	if events := f.events(); len(events) != 0 {
		t.Errorf("events = %v, want none", events)
	}
}

func TestIgnoresPodsNotOnOurNodes(t *testing.T) {
	otherCluster := ourNode()
	otherCluster.Labels[kubeoceanv1alpha1.LabelClusterID] = "c2"
	noPhysical := ourNode()
	delete(noPhysical.Labels, kubeoceanv1alpha1.LabelPhysicalNodeName)
	unscheduled := podtest.BoundPod()
	unscheduled.Spec.NodeName = ""
	tests := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*corev1.Node
	}{
		{name: "node of another binding", pod: podtest.BoundPod(), nodes: []*corev1.Node{otherCluster}},
		{name: "node without physical node label", pod: podtest.BoundPod(), nodes: []*corev1.Node{noPhysical}},
		{name: "node not cached", pod: podtest.BoundPod(), nodes: []*corev1.Node{}},
		{name: "not scheduled", pod: unscheduled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{tt.pod}, nodes: tt.nodes})
			f.mustReconcile()
			assertWrites(t, f)
			if len(f.dependents.calls) != 0 {
				t.Errorf("dependents called: %v", f.dependents.calls)
			}
		})
	}
}

func TestUpdateCarriesVirtualChanges(t *testing.T) {
	virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
	physical := physicalFor(virtual)
	physical.Labels["added-by-webhook"] = "yes"
	virtual.Labels["tier"] = "frontend"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical}})
	f.mustReconcile()
	assertWrites(t, f, "physical patch pods")
	patch := actions(f.physicalKube, "patch", "pods")[0].(clienttesting.PatchAction)
	if patch.GetPatchType() != types.StrategicMergePatchType {
		t.Errorf("patch type = %s, want strategic merge", patch.GetPatchType())
	}
	stored, err := f.physicalPod()
	if err != nil {
		t.Fatal(err)
	}
	if stored.Labels[tenantmeta.LabelKey("tier")] != "frontend" || stored.Labels["added-by-webhook"] != "yes" {
		t.Errorf("physical labels = %v, want tier added and the webhook's label kept", stored.Labels)
	}
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
}

// The physical pod of an earlier virtual pod of the same name is left to
// the bottom-up side, which deletes it: it records another virtual UID.
// Nothing is written meanwhile.
func TestWaitsForStalePhysicalTwin(t *testing.T) {
	stale := physicalFor(podtest.BoundPod())
	stale.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] = "earlier-uid"
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.BoundPod()}, physicalPods: []*corev1.Pod{stale}})
	f.mustReconcile()
	assertWrites(t, f)
	if len(f.dependents.calls) != 0 {
		t.Errorf("dependencies copied while waiting: %v", f.dependents.calls)
	}
}

// After a crash between the physical create and the bottom-up side's first
// status write, the virtual pod names no physical pod. The restarted
// controller finds the pod by name, proven this virtual pod's by the UID it
// records, and keeps it: no second create, no write to the virtual pod,
// nothing failed. A virtual pod whose mapping and physical UID are recorded
// and whose physical pod is gone is lost, as before.
func TestTwinFoundBeforeItsMappingIsRecorded(t *testing.T) {
	virtual := podtest.BoundPod()
	twin := physicalFor(virtual)
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{twin}})
	f.mustReconcile()
	assertWrites(t, f)
	if phase := f.virtualPod().Status.Phase; phase == corev1.PodFailed {
		t.Errorf("virtual pod phase = %s, want it kept", phase)
	}

	// Unmapped and without a physical pod: created, not lost.
	f = newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.BoundPod()}})
	f.mustReconcile()
	assertWrites(t, f, "physical create pods")
	if phase := f.virtualPod().Status.Phase; phase == corev1.PodFailed {
		t.Errorf("virtual pod phase = %s, want Pending until it runs", phase)
	}
}

func TestTerminalVirtualPodIsNotCreated(t *testing.T) {
	virtual := podtest.Mapped(podtest.BoundPod(), physicalUID)
	virtual.Status.Phase = corev1.PodSucceeded
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now)}})
	f.mustReconcile()
	// Its physical pod is gone: the token Secret goes too.
	assertWrites(t, f, "physical delete secrets")
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
}

func TestMappingMismatchIsTerminal(t *testing.T) {
	virtual := podtest.BoundPod()
	virtual.Annotations = map[string]string{
		kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "elsewhere",
		kubeoceanv1alpha1.AnnotationPhysicalPodName:      physicalName,
	}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}})
	_, err := f.reconcile()
	if !controller.IsTerminal(err) {
		t.Errorf("error = %v, want a terminal one", err)
	}
	assertWrites(t, f)
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], kubeoceanv1alpha1.ReasonPhysicalPodMappingMismatch) {
		t.Errorf("events = %v, want one %s", events, kubeoceanv1alpha1.ReasonPhysicalPodMappingMismatch)
	}
}

func TestNameTakenByForeignPod(t *testing.T) {
	foreign := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: mountNS, Name: physicalName, UID: "foreign"}}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.Mapped(podtest.BoundPod(), "")}, livePhysical: []runtime.Object{foreign}})
	result := f.mustReconcile()
	if result.RequeueAfter != conflictRecheck {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, conflictRecheck)
	}
	if events := f.events(); len(events) != 1 || !strings.Contains(events[0], "Warning "+kubeoceanv1alpha1.ReasonPhysicalPodNameTaken) {
		t.Errorf("events = %v, want one Warning %s", events, kubeoceanv1alpha1.ReasonPhysicalPodNameTaken)
	}
}

// A change of the virtual pod brings it back before the physical pod's
// event: the pass waits for that event instead of creating again.
func TestCreatedPodAwaitedInCache(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{podtest.BoundPod()}})
	f.mustReconcile()
	assertWrites(t, f, "physical create pods")
	f.cache("virtualPods", f.virtualPod())
	calls := len(f.dependents.calls)

	if result := f.mustReconcile(); result.RequeueAfter != createdPodTimeout {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, createdPodTimeout)
	}
	assertWrites(t, f)
	if len(f.dependents.calls) != calls {
		t.Errorf("dependencies copied again: %v", f.dependents.calls[calls:])
	}

	// The event never came: after the timeout a create finds the pod
	// there, ours, and waits no more.
	f.clock.Step(createdPodTimeout)
	f.mustReconcile()
	assertWrites(t, f, "physical create pods")
	if events := f.events(); len(events) != 0 {
		t.Errorf("events = %v, want none", events)
	}
}
