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

package dependents_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

const ns = dependentstest.Namespace

var (
	mountNS   = dependentstest.MountNamespace
	finalizer = kubeoceanv1alpha1.Finalizer(dependentstest.ClusterID)
	syncedBy  = kubeoceanv1alpha1.SyncedByLabel(dependentstest.ClusterID)
)

func virtualConfigMap(t *testing.T, e *dependentstest.Env, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.Virtual.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func physicalConfigMap(t *testing.T, e *dependentstest.Env, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := e.Physical.CoreV1().ConfigMaps(mountNS).Get(context.Background(), kubeoceanv1alpha1.PhysicalName(ns, name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// synced returns an Env in which the ConfigMap name is marked and copied,
// with caches in step and the write log empty.
func synced(t *testing.T, cm *corev1.ConfigMap, objects ...runtime.Object) *dependentstest.Env {
	t.Helper()
	e := dependentstest.New(t, append([]runtime.Object{cm}, objects...), nil)
	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, cm.Name); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	return e
}

func TestEnsureConfigMapMarksThenCreates(t *testing.T) {
	e := dependentstest.New(t, []runtime.Object{dependentstest.ConfigMap("conf", map[string]string{"k": "v"})}, nil)
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")

	got, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf")
	if err != nil || got != physicalName {
		t.Fatalf("EnsureConfigMap = %q, %v; want %q", got, err, physicalName)
	}
	// The virtual object is marked before the copy exists.
	e.ExpectWrites("virtual update configmaps app/conf", "physical create configmaps mount/"+physicalName)

	virtual := virtualConfigMap(t, e, "conf")
	if virtual.Labels[syncedBy] != "true" || virtual.Labels[kubeoceanv1alpha1.LabelManagedBy] != kubeoceanv1alpha1.ManagedByKubeocean ||
		!slices.Contains(virtual.Finalizers, finalizer) ||
		virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalName] != physicalName ||
		virtual.Annotations[kubeoceanv1alpha1.AnnotationPhysicalNamespace] != mountNS {
		t.Errorf("virtual ConfigMap not marked: labels %v, annotations %v, finalizers %v", virtual.Labels, virtual.Annotations, virtual.Finalizers)
	}
	physical := physicalConfigMap(t, e, "conf")
	// The copy carries the binding's identity, which the physical caches
	// select on and without which nothing is updated or deleted.
	wantLabels := dependentstest.Owner.Stamp(map[string]string{"app": "web"})
	if !maps.Equal(physical.Labels, wantLabels) || physical.Data["k"] != "v" ||
		physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] != "conf" ||
		physical.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] != ns {
		t.Errorf("physical copy: labels %v, annotations %v, data %v", physical.Labels, physical.Annotations, physical.Data)
	}

	// Once the caches have seen both, a second call writes nothing.
	e.SyncCaches()
	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites()
}

func TestEnsureConfigMapPropagatesChanges(t *testing.T) {
	e := synced(t, dependentstest.ConfigMap("conf", map[string]string{"k": "v"}))
	virtual := virtualConfigMap(t, e, "conf")
	virtual.Data = map[string]string{"k": "v2", "new": "x"}
	delete(virtual.Labels, "app")
	virtual.Labels["tier"] = "front"
	if _, err := e.Virtual.CoreV1().ConfigMaps(ns).Update(context.Background(), virtual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()

	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites("physical update configmaps mount/" + kubeoceanv1alpha1.PhysicalName(ns, "conf"))
	physical := physicalConfigMap(t, e, "conf")
	if physical.Data["k"] != "v2" || physical.Data["new"] != "x" || physical.Labels["tier"] != "front" || physical.Labels["app"] != "" {
		t.Errorf("copy not updated: labels %v, data %v", physical.Labels, physical.Data)
	}
	e.SyncCaches()
	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites()
}

func TestEnsureConfigMapAdoptsOwnCopy(t *testing.T) {
	// A copy that lost its managed-by label (so no cache holds it) but
	// still names this ConfigMap is ours: it is adopted, not refused.
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	stray := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: mountNS, Name: physicalName, UID: "stray",
			Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: "conf", kubeoceanv1alpha1.AnnotationVirtualNamespace: ns},
		},
		Data: map[string]string{"k": "old"},
	}
	e := dependentstest.New(t, []runtime.Object{dependentstest.ConfigMap("conf", map[string]string{"k": "v"})}, []runtime.Object{stray})

	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites("virtual update configmaps app/conf",
		"physical create configmaps mount/"+physicalName, "physical update configmaps mount/"+physicalName)
	physical := physicalConfigMap(t, e, "conf")
	if physical.UID != "stray" || physical.Data["k"] != "v" || !dependentstest.Owner.Owns(physical) {
		t.Errorf("copy not adopted: uid %s, labels %v, data %v", physical.UID, physical.Labels, physical.Data)
	}
}

func TestEnsureConfigMapRefusesForeignObject(t *testing.T) {
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	managed := map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	for name, tc := range map[string]struct{ labels, annotations map[string]string }{
		"no mapping":            {labels: managed},
		"another object's copy": {labels: managed, annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: "other", kubeoceanv1alpha1.AnnotationVirtualNamespace: ns}},
		// Another virtual cluster binds the same physical cluster with
		// the same mount namespace and has a ConfigMap of the same
		// namespace and name: same physical name, same mapping, but its
		// binding's identity.
		"another binding's copy of the same object": {labels: otherBinding.Stamp(nil), annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: "conf", kubeoceanv1alpha1.AnnotationVirtualNamespace: ns}},
	} {
		t.Run(name, func(t *testing.T) {
			foreign := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{
					Namespace: mountNS, Name: physicalName, UID: "foreign", Annotations: tc.annotations, Labels: tc.labels,
				},
				Data: map[string]string{"theirs": "1"},
			}
			e := dependentstest.New(t, []runtime.Object{dependentstest.ConfigMap("conf", map[string]string{"k": "v"})}, []runtime.Object{foreign})

			_, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf")
			var conflict *dependents.ConflictError
			if !errors.As(err, &conflict) || conflict.PhysicalName != physicalName {
				t.Fatalf("err = %v, want a ConflictError for %s", err, physicalName)
			}
			// Marking is all that happened; the foreign object is untouched.
			e.ExpectWrites("virtual update configmaps app/conf")
			if got := physicalConfigMap(t, e, "conf"); got.Data["theirs"] != "1" || len(got.Data) != 1 {
				t.Errorf("foreign object changed: %v", got.Data)
			}
			select {
			case event := <-e.Recorder.Events:
				if !strings.Contains(event, kubeoceanv1alpha1.ReasonPhysicalNameConflict) {
					t.Errorf("event %q, want reason %s", event, kubeoceanv1alpha1.ReasonPhysicalNameConflict)
				}
			default:
				t.Error("no event recorded")
			}
		})
	}
}

// otherBinding is a binding of another virtual cluster that picked the same
// cluster ID and shares the physical cluster and its mount namespace.
var otherBinding = ownership.Owner{ClusterID: dependentstest.ClusterID, BindingUID: "binding-of-another-virtual-cluster"}

// A copy of another binding at our mapped name, naming a virtual object of
// the same namespace and name, is never collected: neither as an orphan
// (our virtual object is gone) nor when our virtual object is released.
func TestNeverDeletesAnotherBindingsCopy(t *testing.T) {
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: mountNS, Name: physicalName, UID: "theirs", Labels: otherBinding.Stamp(nil),
		Annotations: map[string]string{kubeoceanv1alpha1.AnnotationVirtualName: "conf", kubeoceanv1alpha1.AnnotationVirtualNamespace: ns},
	}}
	e := dependentstest.New(t, nil, []runtime.Object{theirs})
	if err := e.Syncer.DeleteOrphanConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	if err := e.Syncer.ReleaseConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites()
	if got := physicalConfigMap(t, e, "conf"); got.UID != "theirs" {
		t.Errorf("another binding's copy was replaced: %v", got.ObjectMeta)
	}
}

func TestEnsureImmutableConfigMapReplacesCopy(t *testing.T) {
	cm := dependentstest.ConfigMap("conf", map[string]string{"k": "v"})
	cm.Immutable = ptr.To(true)
	e := synced(t, cm)
	// An immutable ConfigMap cannot be edited; users replace it. The new
	// one is marked again by the pod controller's next call.
	if err := e.Virtual.CoreV1().ConfigMaps(ns).Delete(context.Background(), "conf", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replacement := dependentstest.ConfigMap("conf", map[string]string{"k": "v2"})
	replacement.Immutable = ptr.To(true)
	if _, err := e.Virtual.CoreV1().ConfigMaps(ns).Create(context.Background(), replacement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()

	if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
		t.Fatal(err)
	}
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	e.ExpectWrites("virtual update configmaps app/conf",
		"physical delete configmaps mount/"+physicalName, "physical create configmaps mount/"+physicalName)
	if got := physicalConfigMap(t, e, "conf"); got.Data["k"] != "v2" || !ptr.Deref(got.Immutable, false) {
		t.Errorf("copy: data %v, immutable %v", got.Data, got.Immutable)
	}
}

func TestEnsureSecretRefusesServiceAccountToken(t *testing.T) {
	token := dependentstest.Secret(ns, "token", map[string]string{"token": "t"})
	token.Type = corev1.SecretTypeServiceAccountToken
	e := dependentstest.New(t, []runtime.Object{token}, nil)

	_, err := e.Syncer.EnsureSecret(e.Context(), ns, "token")
	var notReady *dependents.NotReadyError
	if !errors.As(err, &notReady) || notReady.Reason != dependents.ReasonServiceAccountToken {
		t.Fatalf("err = %v, want NotReadyError %s", err, dependents.ReasonServiceAccountToken)
	}
	e.ExpectWrites()
}

func TestEnsureSecretCopiesImagePullSecret(t *testing.T) {
	pull := dependentstest.Secret(ns, "registry", map[string]string{corev1.DockerConfigJsonKey: `{"auths":{}}`})
	pull.Type = corev1.SecretTypeDockerConfigJson
	e := dependentstest.New(t, []runtime.Object{pull}, nil)

	name, err := e.Syncer.EnsureSecret(e.Context(), ns, "registry")
	if err != nil {
		t.Fatal(err)
	}
	copied, err := e.Physical.CoreV1().Secrets(mountNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if copied.Type != corev1.SecretTypeDockerConfigJson || string(copied.Data[corev1.DockerConfigJsonKey]) != `{"auths":{}}` {
		t.Errorf("copy: type %s, data %v", copied.Type, copied.Data)
	}
	e.SyncCaches()
	e.Writes()
	if _, err := e.Syncer.EnsureSecret(e.Context(), ns, "registry"); err != nil {
		t.Fatal(err)
	}
	e.ExpectWrites()
}

func TestReleaseConfigMap(t *testing.T) {
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	t.Run("deleted virtual object", func(t *testing.T) {
		e := synced(t, dependentstest.ConfigMap("conf", map[string]string{"k": "v"}))
		virtual := virtualConfigMap(t, e, "conf")
		virtual.DeletionTimestamp = ptr.To(metav1.Now())
		if _, err := e.Virtual.CoreV1().ConfigMaps(ns).Update(context.Background(), virtual, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.SyncCaches()
		e.Writes()

		if err := e.Syncer.ReleaseConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
		// The copy goes first, then the finalizer.
		e.ExpectWrites("physical delete configmaps mount/"+physicalName, "virtual update configmaps app/conf")
		if got := virtualConfigMap(t, e, "conf"); slices.Contains(got.Finalizers, finalizer) {
			t.Errorf("finalizer still there: %v", got.Finalizers)
		}
	})
	t.Run("unused object looks untouched", func(t *testing.T) {
		e := synced(t, dependentstest.ConfigMap("conf", map[string]string{"k": "v"}))
		if err := e.Syncer.ReleaseConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
		e.ExpectWrites("physical delete configmaps mount/"+physicalName, "virtual update configmaps app/conf")
		got := virtualConfigMap(t, e, "conf")
		if !maps.Equal(got.Labels, map[string]string{"app": "web"}) || len(got.Annotations) != 0 || len(got.Finalizers) != 0 {
			t.Errorf("virtual ConfigMap keeps marks: labels %v, annotations %v, finalizers %v", got.Labels, got.Annotations, got.Finalizers)
		}
		e.SyncCaches()
		if err := e.Syncer.ReleaseConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
		e.ExpectWrites()
	})
}

func TestDeleteOrphanConfigMap(t *testing.T) {
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	t.Run("virtual object gone", func(t *testing.T) {
		e := synced(t, dependentstest.ConfigMap("conf", nil))
		if err := e.Virtual.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("configmaps"), ns, "conf"); err != nil {
			t.Fatal(err)
		}
		e.SyncCaches()
		if err := e.Syncer.DeleteOrphanConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
		e.ExpectWrites("physical delete configmaps mount/" + physicalName)
	})
	t.Run("virtual cache behind", func(t *testing.T) {
		// The copy was just made and the marked object is not cached yet.
		e := dependentstest.New(t, []runtime.Object{dependentstest.ConfigMap("conf", nil)}, nil)
		if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
		e.Writes()
		e.PhysicalInformers.Core().V1().ConfigMaps().Informer().GetIndexer().Add(physicalConfigMap(t, e, "conf"))
		if err := e.Syncer.DeleteOrphanConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
		e.ExpectWrites()
	})
}

// Pods created together that use one ConfigMap ensure its copy at once,
// before the cache shows it: they share one pass, so the copy is created
// once, not raced for (each loser meeting AlreadyExists and a live read).
func TestConcurrentEnsuresShareOnePass(t *testing.T) {
	e := dependentstest.New(t, []runtime.Object{dependentstest.ConfigMap("conf", map[string]string{"k": "v"})}, nil)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	e.Physical.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		return false, nil, nil
	})
	const callers = 8
	errs := make(chan error, callers)
	go func() {
		_, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf")
		errs <- err
	}()
	<-entered // the first pass is creating the copy
	for range callers - 1 {
		go func() {
			_, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf")
			errs <- err
		}()
	}
	time.Sleep(100 * time.Millisecond) // the others join it
	close(release)
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	e.ExpectWrites("virtual update configmaps app/conf", "physical create configmaps mount/"+kubeoceanv1alpha1.PhysicalName(ns, "conf"))
}

// A copy just created stands in for the cache until the copy's event: the
// next pod's pass creates nothing (before, it met AlreadyExists and read
// the copy live). The event, or a minute without one, ends that.
func TestEnsureRemembersTheCopyItCreated(t *testing.T) {
	e := dependentstest.New(t, []runtime.Object{dependentstest.ConfigMap("conf", map[string]string{"k": "v"})}, nil)
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	create := "physical create configmaps mount/" + physicalName
	ensure := func() {
		t.Helper()
		if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
	}
	ensure()
	e.ExpectWrites("virtual update configmaps app/conf", create)
	ensure() // the caches have shown nothing yet
	e.ExpectWrites()

	// Deleted by someone once the cache showed it: the events tell.
	e.SyncCaches()
	if err := e.Physical.CoreV1().ConfigMaps(mountNS).Delete(e.Context(), physicalName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Writes()
	e.SyncCaches()
	ensure()
	e.ExpectWrites(create)

	// Deleted before the cache showed it, and no event ever came: after a
	// minute the memory no longer speaks for it.
	if err := e.Physical.CoreV1().ConfigMaps(mountNS).Delete(e.Context(), physicalName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Writes()
	ensure()
	e.ExpectWrites()
	e.Clock.Step(time.Minute)
	ensure()
	e.ExpectWrites(create)
}

// TestEnsureTrustsUnchangedVersions: once an ensure found the virtual
// object and its copy in sync, later ensures trust them while the caches
// show both at the same resourceVersions, and compare again when either
// changes. (The fake clients keep the versions the test gives; an API
// server changes them with every write, so a copy changed at an unchanged
// version, as below, cannot happen there: it is how the test sees that
// nothing was compared.)
func TestEnsureTrustsUnchangedVersions(t *testing.T) {
	cm := dependentstest.ConfigMap("conf", map[string]string{"k": "v"})
	cm.ResourceVersion = "1"
	e := synced(t, cm)
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "conf")
	ensure := func() {
		t.Helper()
		if _, err := e.Syncer.EnsureConfigMap(e.Context(), ns, "conf"); err != nil {
			t.Fatal(err)
		}
	}
	writeCopy := func(version, value string) {
		t.Helper()
		physical := physicalConfigMap(t, e, "conf")
		physical.ResourceVersion, physical.Data["k"] = version, value
		if _, err := e.Physical.CoreV1().ConfigMaps(mountNS).Update(e.Context(), physical, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.SyncCaches()
		e.Writes()
	}

	writeCopy("7", "v")
	ensure() // in sync: versions 1 and 7 remembered
	e.ExpectWrites()
	writeCopy("7", "tampered")
	ensure()
	e.ExpectWrites()

	writeCopy("8", "tampered")
	ensure()
	e.ExpectWrites("physical update configmaps mount/" + physicalName)
	if got := physicalConfigMap(t, e, "conf").Data["k"]; got != "v" {
		t.Fatalf("copy after a new version: %q, want it repaired", got)
	}

	// The repaired copy has the version the test gave it, 8, and the
	// content it should have: trusted again after one ensure.
	e.SyncCaches()
	ensure()
	e.ExpectWrites()
	virtual := virtualConfigMap(t, e, "conf")
	virtual.ResourceVersion, virtual.Data["k"] = "2", "v2"
	if _, err := e.Virtual.CoreV1().ConfigMaps(ns).Update(e.Context(), virtual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	ensure()
	e.ExpectWrites("physical update configmaps mount/" + physicalName)
	if got := physicalConfigMap(t, e, "conf").Data["k"]; got != "v2" {
		t.Fatalf("copy after a new virtual version: %q, want v2", got)
	}
}
