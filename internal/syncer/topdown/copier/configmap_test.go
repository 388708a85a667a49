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

package copier

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

const ns = dependentstest.Namespace

var (
	configMapKey  = cache.ObjectName{Namespace: ns, Name: "conf"}
	configMapCopy = kubeoceanv1alpha1.PhysicalName(ns, "conf")
)

// configMapFixture is the controller over a dependentstest.Env in which the pod
// controller has copied the ConfigMap conf for the pod web.
type configMapFixture struct {
	t   *testing.T
	e   *dependentstest.Env
	c   *dependents.Controller[*corev1.ConfigMap]
	pod *corev1.Pod
}

func newConfigMapFixture(t *testing.T) *configMapFixture {
	t.Helper()
	pod := dependentstest.Pod("web", []string{"conf"}, nil, nil)
	e := dependentstest.New(t, []runtime.Object{dependentstest.ConfigMap("conf", map[string]string{"k": "v"}), pod}, nil)
	c := newControllers(t, e).ConfigMaps
	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	return &configMapFixture{t: t, e: e, c: c, pod: pod}
}

func (f *configMapFixture) reconcile() controller.Result {
	f.t.Helper()
	result, err := f.c.Reconcile(f.e.Context(), configMapKey)
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return result
}

// expectNoSecondWrite syncs the caches and checks one more pass writes
// nothing.
func (f *configMapFixture) expectNoSecondWrite() {
	f.t.Helper()
	f.e.SyncCaches()
	f.reconcile()
	f.e.ExpectWrites()
}

func (f *configMapFixture) virtual() *corev1.ConfigMap {
	f.t.Helper()
	cm, err := f.e.Virtual.CoreV1().ConfigMaps(ns).Get(context.Background(), "conf", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return cm
}

func (f *configMapFixture) updateVirtual(change func(*corev1.ConfigMap)) {
	f.t.Helper()
	cm := f.virtual()
	change(cm)
	if _, err := f.e.Virtual.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	f.e.SyncCaches()
	f.e.Writes()
}

func TestConfigMapInSyncMakesNoWrite(t *testing.T) {
	f := newConfigMapFixture(t)
	f.reconcile()
	f.e.ExpectWrites()
}

func TestConfigMapPropagatesContentChange(t *testing.T) {
	f := newConfigMapFixture(t)
	f.updateVirtual(func(cm *corev1.ConfigMap) { cm.Data["k"] = "v2" })

	f.reconcile()
	f.e.ExpectWrites("physical update configmaps mount/" + configMapCopy)
	copied, err := f.e.Physical.CoreV1().ConfigMaps(dependentstest.MountNamespace).Get(context.Background(), configMapCopy, metav1.GetOptions{})
	if err != nil || copied.Data["k"] != "v2" {
		t.Fatalf("copy %v, %v; want k=v2", copied, err)
	}
	f.expectNoSecondWrite()
}

func TestConfigMapDeletionDeletesCopyThenDropsFinalizer(t *testing.T) {
	f := newConfigMapFixture(t)
	f.updateVirtual(func(cm *corev1.ConfigMap) {
		cm.DeletionTimestamp = ptr.To(metav1.Now())
		cm.Finalizers = append(cm.Finalizers, "someone.else/keep")
	})

	f.reconcile()
	f.e.ExpectWrites("physical delete configmaps mount/"+configMapCopy, "virtual update configmaps app/conf")
	if got := f.virtual().Finalizers; !slices.Equal(got, []string{"someone.else/keep"}) {
		t.Errorf("finalizers %v, want only the other one", got)
	}
	f.expectNoSecondWrite()
}

func TestConfigMapCollectsCopyWhenLastPodGoes(t *testing.T) {
	f := newConfigMapFixture(t)
	f.e.DeletePod(f.pod)

	// Within the grace period nothing happens.
	if result := f.reconcile(); result.RequeueAfter != grace {
		t.Errorf("result %+v, want a requeue after %v", result, grace)
	}
	f.e.ExpectWrites()

	f.e.Clock.Step(grace)
	f.reconcile()
	f.e.ExpectWrites("physical delete configmaps mount/"+configMapCopy, "virtual update configmaps app/conf")
	got := f.virtual()
	if _, ok := got.Labels[kubeoceanv1alpha1.SyncedByLabel(dependentstest.ClusterID)]; ok || len(got.Finalizers) != 0 || len(got.Annotations) != 0 {
		t.Errorf("virtual ConfigMap keeps marks: labels %v, annotations %v, finalizers %v", got.Labels, got.Annotations, got.Finalizers)
	}
	// Unmarked, it leaves the cache; a pass then finds nothing to do.
	f.expectNoSecondWrite()
}

func TestConfigMapFinishedPodWithoutTwinReleasesCopy(t *testing.T) {
	f := newConfigMapFixture(t)
	finished := f.pod.DeepCopy()
	finished.Status.Phase = corev1.PodSucceeded
	f.e.AddPod(finished)
	f.reconcile()
	f.e.Clock.Step(grace)
	f.reconcile()
	f.e.ExpectWrites("physical delete configmaps mount/"+configMapCopy, "virtual update configmaps app/conf")
}

func TestConfigMapRestoresDeletedCopy(t *testing.T) {
	f := newConfigMapFixture(t)
	if err := f.e.Physical.CoreV1().ConfigMaps(dependentstest.MountNamespace).Delete(context.Background(), configMapCopy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.e.SyncCaches()
	f.e.Writes()

	// The physical delete event maps back to the virtual ConfigMap.
	var keys []cache.ObjectName
	handler := controller.Handler[*corev1.ConfigMap, cache.ObjectName]{Enqueue: func(k cache.ObjectName) { keys = append(keys, k) }, Keys: dependents.CopyKeys[*corev1.ConfigMap](true)}
	handler.OnDelete(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: dependentstest.MountNamespace, Name: configMapCopy,
		Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: "conf", kubeoceanv1alpha1.AnnotationVirtualNamespace: ns},
	}})
	if !slices.Equal(keys, []cache.ObjectName{configMapKey}) {
		t.Errorf("physical event keys %v, want %v", keys, configMapKey)
	}

	f.reconcile()
	f.e.ExpectWrites("physical create configmaps mount/" + configMapCopy)
	f.expectNoSecondWrite()
}

func TestConfigMapDeletesOrphanedCopy(t *testing.T) {
	f := newConfigMapFixture(t)
	// Someone removed our finalizer and the object went; then the last pod
	// using it went too.
	if err := f.e.Virtual.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("configmaps"), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	f.e.DeletePod(f.pod)
	f.e.SyncCaches()
	f.reconcile()
	f.e.ExpectWrites("physical delete configmaps mount/" + configMapCopy)
}

// A virtual ConfigMap replaced by someone (kubectl replace, a GitOps tool)
// loses our label and finalizer and drops out of the cache of marked
// objects. A pod still uses it: the copy is not an orphan; the object is
// marked again and the copy left in place.
func TestConfigMapReplacedObjectInUseIsMarkedAgain(t *testing.T) {
	f := newConfigMapFixture(t)
	f.updateVirtual(dropMarks)
	f.reconcile()
	f.e.ExpectWrites("virtual update configmaps app/conf")
	if cm := f.virtual(); !dependents.IsMarked(cm, dependentstest.ClusterID) {
		t.Errorf("virtual ConfigMap not marked again: labels %v, finalizers %v", cm.Labels, cm.Finalizers)
	}
	select {
	case event := <-f.e.Recorder.Events:
		if !strings.Contains(event, "Warning "+kubeoceanv1alpha1.ReasonKubeoceanMarksRestored) {
			t.Errorf("event %q, want a Warning %s", event, kubeoceanv1alpha1.ReasonKubeoceanMarksRestored)
		}
	default:
		t.Errorf("no event says the marks were put back")
	}
	f.expectNoSecondWrite()

	// The copy, deleted as well meanwhile, comes back.
	f.updateVirtual(dropMarks)
	if err := f.e.Physical.CoreV1().ConfigMaps(dependentstest.MountNamespace).Delete(context.Background(), configMapCopy, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.e.SyncCaches()
	f.e.Writes()
	f.reconcile()
	f.e.ExpectWrites("virtual update configmaps app/conf", "physical create configmaps mount/"+configMapCopy)
	f.expectNoSecondWrite()
}

// A virtual ConfigMap deleted without our finalizer while a pod still uses
// it: its copy stays under the pod, and goes once the pod is gone.
func TestConfigMapKeepsCopyOfGoneObjectWhilePodsUseIt(t *testing.T) {
	f := newConfigMapFixture(t)
	if err := f.e.Virtual.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("configmaps"), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	f.e.SyncCaches()
	if result := f.reconcile(); result != (controller.Result{}) {
		t.Errorf("result %+v, want none: the pod's events bring the key back", result)
	}
	f.e.ExpectWrites()

	f.e.DeletePod(f.pod)
	f.e.SyncCaches()
	f.reconcile()
	f.e.ExpectWrites("physical delete configmaps mount/" + configMapCopy)
}

// dropMarks is what a replace with the user's own manifest does to a
// marked object: our labels, annotations and finalizer are gone.
func dropMarks(cm *corev1.ConfigMap) {
	for k := range cm.Labels {
		if strings.HasPrefix(k, "kubeocean.io/") {
			delete(cm.Labels, k)
		}
	}
	for k := range cm.Annotations {
		if strings.HasPrefix(k, "kubeocean.io/") {
			delete(cm.Annotations, k)
		}
	}
	cm.Finalizers = nil
}

// Another controller labels and annotates the copy: its label and
// annotation stay, the event is dropped before the queue, a reconcile
// writes nothing, and a later change of the virtual labels is carried
// over without touching theirs.
func TestConfigMapOtherWritersLabelsStay(t *testing.T) {
	f := newConfigMapFixture(t)
	copyOf := func() *corev1.ConfigMap {
		cm, err := f.e.Physical.CoreV1().ConfigMaps(dependentstest.MountNamespace).Get(context.Background(), configMapCopy, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	before := copyOf()
	labelled := before.DeepCopy()
	labelled.Labels["team.example.com/owner"] = "blue"
	labelled.Annotations = map[string]string{"backup.example.com/at": "now"}
	for k, v := range before.Annotations {
		labelled.Annotations[k] = v
	}
	labelled, err := f.e.Physical.CoreV1().ConfigMaps(dependentstest.MountNamespace).Update(context.Background(), labelled, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.e.SyncCaches()
	f.e.Writes()

	var keys []cache.ObjectName
	handler := controller.Handler[*corev1.ConfigMap, cache.ObjectName]{
		Enqueue: func(k cache.ObjectName) { keys = append(keys, k) },
		Keys:    dependents.CopyKeys[*corev1.ConfigMap](true), Changed: dependents.CopyChanged[*corev1.ConfigMap],
	}
	handler.OnUpdate(before, labelled)
	if len(keys) != 0 {
		t.Errorf("another writer's label enqueued %v", keys)
	}

	for range 3 {
		f.reconcile()
	}
	f.e.ExpectWrites()

	f.updateVirtual(func(cm *corev1.ConfigMap) { cm.Labels["tier"] = "front" })
	f.reconcile()
	f.e.ExpectWrites("physical update configmaps mount/" + configMapCopy)
	got := copyOf()
	if got.Labels["team.example.com/owner"] != "blue" || got.Labels["tier"] != "front" || got.Annotations["backup.example.com/at"] != "now" {
		t.Errorf("copy labels %v, annotations %v: want theirs kept and ours carried over", got.Labels, got.Annotations)
	}
	f.expectNoSecondWrite()
}
