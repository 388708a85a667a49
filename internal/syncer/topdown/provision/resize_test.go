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

package provision

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func storage(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(q)}
}

// resizeFixture: a claim of 1Gi, provisioned and bound: its virtual PV, its
// holder bound to the physical PV local-1.
type resizeFixture struct {
	*fixture
	claim, holder *corev1.PersistentVolumeClaim
	pv            *corev1.PersistentVolume
}

func newResizeFixture(t *testing.T) *resizeFixture {
	t.Helper()
	physical := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-1"}, Spec: corev1.PersistentVolumeSpec{Capacity: storage("1Gi")}}
	f := &resizeFixture{fixture: newFixture(t, physical)}
	f.add(t, "virtualClasses", &expandableClass)
	f.claim = &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", UID: "claim-uid"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("cls-ssd"), VolumeName: "pvc-claim-uid",
			Resources: corev1.VolumeResourceRequirements{Requests: storage("1Gi")}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: storage("1Gi"),
			Conditions: []corev1.PersistentVolumeClaimCondition{{Type: "Other", Status: corev1.ConditionTrue}}},
	}
	f.pv = &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-claim-uid", Annotations: map[string]string{
			annotationProvisionedBy: ProvisionerName(clusterID), kubeoceanv1alpha1.AnnotationHolderClaim: "pvc-claim-uid", kubeoceanv1alpha1.AnnotationPhysicalVolume: "local-1"}},
		Spec: corev1.PersistentVolumeSpec{Capacity: storage("1Gi"), StorageClassName: "cls-ssd",
			ClaimRef: &corev1.ObjectReference{Namespace: "app", Name: "data", UID: "claim-uid"}},
	}
	f.holder = &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "pvc-claim-uid", Labels: map[string]string{kubeoceanv1alpha1.LabelVolumeHolder: "true"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("ssd"), VolumeName: "local-1",
			Resources: corev1.VolumeResourceRequirements{Requests: storage("1Gi")}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: storage("1Gi")},
	}
	for _, obj := range []runtime.Object{f.claim, f.pv} {
		if err := f.virtual.Tracker().Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.physical.Tracker().Add(f.holder); err != nil {
		t.Fatal(err)
	}
	f.add(t, "virtualClaims", f.claim)
	f.add(t, "virtualVolumes", f.pv)
	f.add(t, "holders", f.holder)
	return f
}

var expandableClass = func() storagev1.StorageClass {
	return storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "cls-ssd"}, Provisioner: ProvisionerName(clusterID),
		Parameters: map[string]string{kubeoceanv1alpha1.ParameterPhysicalStorageClass: "ssd"}, AllowVolumeExpansion: ptr.To(true)}
}()

// refresh puts the clients' current objects into the caches, as the
// informers would.
func (f *resizeFixture) refresh(t *testing.T) {
	t.Helper()
	get := func(obj runtime.Object, err error) runtime.Object {
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	f.claim = get(f.virtual.CoreV1().PersistentVolumeClaims("app").Get(t.Context(), "data", metav1.GetOptions{})).(*corev1.PersistentVolumeClaim)
	f.pv = get(f.virtual.CoreV1().PersistentVolumes().Get(t.Context(), "pvc-claim-uid", metav1.GetOptions{})).(*corev1.PersistentVolume)
	f.holder = get(f.physical.CoreV1().PersistentVolumeClaims(mount).Get(t.Context(), "pvc-claim-uid", metav1.GetOptions{})).(*corev1.PersistentVolumeClaim)
	for store, obj := range map[string]any{"virtualClaims": f.claim, "virtualVolumes": f.pv, "holders": f.holder} {
		if err := f.stores[store].Update(obj); err != nil {
			t.Fatal(err)
		}
	}
	actions(f.virtual)
	actions(f.physical)
}

// sync reconciles the claim and returns the writes it made in each
// cluster (reads left out) and when it asks to come back.
func (f *resizeFixture) sync(t *testing.T) (virtual, physical []string, requeue string) {
	t.Helper()
	result, err := f.c.syncClaim(t.Context(), "app", "data")
	if err != nil {
		t.Fatal(err)
	}
	writes := func(all []string) []string {
		return slices.DeleteFunc(all, func(a string) bool { return strings.HasPrefix(a, "get ") })
	}
	return writes(actions(f.virtual)), writes(actions(f.physical)), result.RequeueAfter.String()
}

func (f *resizeFixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, strings.Fields(e)[1])
		default:
			return out
		}
	}
}

func resizeCondition(claim *corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, c := range claim.Status.Conditions {
		out = append(out, string(c.Type)+"="+string(c.Status))
	}
	return out
}

func TestResizeFollowsThePhysicalVolume(t *testing.T) {
	f := newResizeFixture(t)
	if v, p, _ := f.sync(t); len(v)+len(p) != 0 {
		t.Fatalf("nothing asked: virtual %v, physical %v", v, p)
	}

	// The user asks for 2Gi: the holder asks for it, the claim shows the
	// resize under way.
	f.claim.Spec.Resources.Requests = storage("2Gi")
	if _, err := f.virtual.CoreV1().PersistentVolumeClaims("app").Update(t.Context(), f.claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh(t)
	v, p, _ := f.sync(t)
	if !slices.Equal(p, []string{"update persistentvolumeclaims pvc-claim-uid"}) || !slices.Equal(v, []string{"update persistentvolumeclaims/status data"}) {
		t.Fatalf("2Gi asked: virtual %v, physical %v", v, p)
	}
	f.refresh(t)
	if got := storageOf(f.holder.Spec.Resources.Requests); got.String() != "2Gi" {
		t.Errorf("holder asks for %s", got.String())
	}
	if got := resizeCondition(f.claim); !slices.Equal(got, []string{"Other=True", "Resizing=True"}) ||
		f.claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimControllerResizeInProgress ||
		storageString(f.claim.Status.AllocatedResources) != "2Gi" || storageString(f.claim.Status.Capacity) != "1Gi" {
		t.Errorf("claim status while resizing: %+v", f.claim.Status)
	}
	if got := f.events(); !slices.Equal(got, []string{kubeoceanv1alpha1.ReasonResizing}) {
		t.Errorf("events %v", got)
	}
	if v, p, _ := f.sync(t); len(v)+len(p) != 0 {
		t.Fatalf("again: virtual %v, physical %v", v, p)
	}

	// The physical resizer grew the volume; the file system waits for the
	// node.
	if err := f.physical.Tracker().Update(corev1.SchemeGroupVersion.WithResource("persistentvolumes"),
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-1"}, Spec: corev1.PersistentVolumeSpec{Capacity: storage("2Gi")}}, ""); err != nil {
		t.Fatal(err)
	}
	f.holder.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(f.clock.Now())}}
	f.holder.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizePending}
	if _, err := f.physical.CoreV1().PersistentVolumeClaims(mount).UpdateStatus(t.Context(), f.holder, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh(t)
	v, p, _ = f.sync(t)
	if len(p) != 0 || !slices.Equal(v, []string{"update persistentvolumes pvc-claim-uid", "update persistentvolumeclaims/status data"}) {
		t.Fatalf("physical volume grown: virtual %v, physical %v", v, p)
	}
	f.refresh(t)
	if got := storageOf(f.pv.Spec.Capacity); got.String() != "2Gi" {
		t.Errorf("virtual PV capacity %s", got.String())
	}
	if got := resizeCondition(f.claim); !slices.Equal(got, []string{"Other=True", "FileSystemResizePending=True"}) ||
		f.claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimNodeResizePending ||
		storageString(f.claim.Status.Capacity) != "1Gi" {
		t.Errorf("claim status while the node resizes: %+v", f.claim.Status)
	}
	if v, p, _ := f.sync(t); len(v)+len(p) != 0 {
		t.Fatalf("again: virtual %v, physical %v", v, p)
	}

	// Done in the physical cluster: the claim has its 2Gi.
	f.holder.Status.Conditions, f.holder.Status.AllocatedResourceStatuses = nil, nil
	f.holder.Status.Capacity = storage("2Gi")
	if _, err := f.physical.CoreV1().PersistentVolumeClaims(mount).UpdateStatus(t.Context(), f.holder, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh(t)
	f.events()
	v, p, _ = f.sync(t)
	if len(p) != 0 || !slices.Equal(v, []string{"update persistentvolumeclaims/status data"}) {
		t.Fatalf("resized: virtual %v, physical %v", v, p)
	}
	f.refresh(t)
	if got := resizeCondition(f.claim); !slices.Equal(got, []string{"Other=True"}) || f.claim.Status.AllocatedResourceStatuses != nil ||
		storageString(f.claim.Status.Capacity) != "2Gi" || storageString(f.claim.Status.AllocatedResources) != "2Gi" {
		t.Errorf("claim status once resized: %+v", f.claim.Status)
	}
	if got := f.events(); !slices.Equal(got, []string{kubeoceanv1alpha1.ReasonVolumeResizeSuccessful}) {
		t.Errorf("events %v", got)
	}
	if v, p, _ := f.sync(t); len(v)+len(p) != 0 {
		t.Fatalf("again: virtual %v, physical %v", v, p)
	}
	// Nothing to resize: not even a read of the physical cluster.
	if _, err := f.c.syncClaim(t.Context(), "app", "data"); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.physical); len(got) != 0 {
		t.Errorf("steady state reads the physical cluster: %v", got)
	}
}

func TestResizeRefusedByThePhysicalCluster(t *testing.T) {
	f := newResizeFixture(t)
	attempts := 0
	f.physical.PrependReactor("update", "persistentvolumeclaims", func(clienttesting.Action) (bool, runtime.Object, error) {
		attempts++
		return true, nil, apierrors.NewForbidden(corev1.Resource("persistentvolumeclaims"), "pvc-claim-uid",
			errorString("exceeded quota: storage, requested: requests.storage=1Gi, limited: requests.storage=1Gi"))
	})
	f.claim.Spec.Resources.Requests = storage("2Gi")
	if _, err := f.virtual.CoreV1().PersistentVolumeClaims("app").Update(t.Context(), f.claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh(t)
	v, _, requeue := f.sync(t)
	if attempts != 1 || !slices.Equal(v, []string{"update persistentvolumeclaims/status data"}) || requeue != ResizeRetry.String() {
		t.Fatalf("refused: %d attempts, virtual %v, requeue %s", attempts, v, requeue)
	}
	f.refresh(t)
	cond := f.claim.Status.Conditions[len(f.claim.Status.Conditions)-1]
	if cond.Type != corev1.PersistentVolumeClaimControllerResizeError || !strings.Contains(cond.Message, "exceeded quota") ||
		f.claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimControllerResizeInfeasible ||
		storageString(f.claim.Status.Capacity) != "1Gi" {
		t.Errorf("claim status once refused: %+v", f.claim.Status)
	}
	if got := f.events(); !slices.Equal(got, []string{kubeoceanv1alpha1.ReasonVolumeResizeFailed}) {
		t.Errorf("events %v", got)
	}

	// Its own status event: no new attempt, no write.
	f.clock.SetTime(f.clock.Now().Add(time.Minute))
	v, _, requeue = f.sync(t)
	if attempts != 1 || len(v) != 0 || requeue != (ResizeRetry-time.Minute).String() {
		t.Fatalf("again: %d attempts, virtual %v, requeue %s", attempts, v, requeue)
	}
	// Tried again after ResizeRetry: refused again, nothing new to write.
	f.clock.SetTime(f.clock.Now().Add(ResizeRetry))
	v, _, _ = f.sync(t)
	if attempts != 2 || len(v) != 0 {
		t.Fatalf("retry: %d attempts, virtual %v", attempts, v)
	}
	// A new request is tried at once.
	f.claim.Spec.Resources.Requests = storage("3Gi")
	if _, err := f.virtual.CoreV1().PersistentVolumeClaims("app").Update(t.Context(), f.claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh(t)
	if _, _, _ = f.sync(t); attempts != 3 {
		t.Fatalf("new request: %d attempts", attempts)
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func storageString(list corev1.ResourceList) string {
	q := storageOf(list)
	return q.String()
}
