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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents/dependentstest"
)

var csiSecret = types.NamespacedName{Namespace: "storage", Name: "disk-creds"}

// volumeEnv has the claim data copied, with its PV and the PV's CSI
// Secret; the pod web mounts the claim and pulls with the Secret registry.
func volumeEnv(t *testing.T) (*dependentstest.Env, *dependents.Controller[*corev1.Secret]) {
	t.Helper()
	claim, pv := dependentstest.BoundClaim("data", "pv-data", &csiSecret)
	e := dependentstest.New(t, []runtime.Object{
		claim, pv,
		dependentstest.Secret(csiSecret.Namespace, csiSecret.Name, map[string]string{"key": "k"}),
		dependentstest.Secret(dependentstest.Namespace, "registry", map[string]string{"auth": "a"}),
	}, nil)
	c := newControllers(t, e).Secrets
	if _, err := e.Syncer.EnsurePVC(e.Context(), dependentstest.Namespace, "data"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Syncer.EnsureSecret(e.Context(), dependentstest.Namespace, "registry"); err != nil {
		t.Fatal(err)
	}
	pod := dependentstest.Pod("web", nil, nil, []string{"data"})
	pod.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	e.AddPod(pod)
	e.SyncCaches()
	e.Writes()
	return e, c
}

func TestSecretCSISecretKeptWhileItsPVIsCopied(t *testing.T) {
	e, c := volumeEnv(t)
	key := cache.ObjectName(csiSecret)

	// No pod names the Secret, but a copied PV does.
	reconcile(t, e, c, key)
	e.ExpectWrites()

	// Content changes reach the CSI copy.
	secret, err := e.Virtual.CoreV1().Secrets(csiSecret.Namespace).Get(context.Background(), csiSecret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.Data["key"] = []byte("rotated")
	if _, err := e.Virtual.CoreV1().Secrets(csiSecret.Namespace).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	reconcile(t, e, c, key)
	e.ExpectWrites("physical update secrets storage/disk-creds")

	// Once the PV is released, the Secret goes after the grace period.
	if err := e.Syncer.ReleasePVC(e.Context(), dependentstest.Namespace, "data"); err != nil {
		t.Fatal(err)
	}
	if err := e.Syncer.ReleasePV(e.Context(), "pv-data"); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()
	if wait := reconcile(t, e, c, key); wait != grace {
		t.Errorf("requeue after %v, want %v", wait, grace)
	}
	e.Clock.Step(grace)
	reconcile(t, e, c, key)
	e.ExpectWrites("physical delete secrets storage/disk-creds", "virtual update secrets storage/disk-creds")
	secret, err = e.Virtual.CoreV1().Secrets(csiSecret.Namespace).Get(context.Background(), csiSecret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(secret.Labels) != 0 || len(secret.Finalizers) != 0 {
		t.Errorf("virtual CSI Secret keeps marks: labels %v, finalizers %v", secret.Labels, secret.Finalizers)
	}
}

func TestSecretImagePullSecretKeptAndCollected(t *testing.T) {
	e, c := volumeEnv(t)
	key := cache.ObjectName{Namespace: dependentstest.Namespace, Name: "registry"}
	reconcile(t, e, c, key)
	e.ExpectWrites()

	e.DeletePod(dependentstest.Pod("web", nil, nil, nil))
	reconcile(t, e, c, key)
	e.Clock.Step(grace)
	reconcile(t, e, c, key)
	e.ExpectWrites("physical delete secrets mount/"+kubeoceanv1alpha1.PhysicalName(dependentstest.Namespace, "registry"),
		"virtual update secrets app/registry")
	e.SyncCaches()
	reconcile(t, e, c, key)
	e.ExpectWrites()
}

func TestSecretDeletedSecretLosesBothCopies(t *testing.T) {
	e, c := volumeEnv(t)
	// The CSI Secret is also pulled with by a pod: it has both copies.
	if _, err := e.Syncer.EnsureSecret(e.Context(), csiSecret.Namespace, csiSecret.Name); err != nil {
		t.Fatal(err)
	}
	secret, err := e.Virtual.CoreV1().Secrets(csiSecret.Namespace).Get(context.Background(), csiSecret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret.DeletionTimestamp = ptr.To(metav1.Now())
	if _, err := e.Virtual.CoreV1().Secrets(csiSecret.Namespace).Update(context.Background(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.SyncCaches()
	e.Writes()

	reconcile(t, e, c, cache.ObjectName(csiSecret))
	e.ExpectWrites(
		"physical delete secrets mount/"+kubeoceanv1alpha1.PhysicalName(csiSecret.Namespace, csiSecret.Name),
		"physical delete secrets storage/disk-creds",
		"virtual update secrets storage/disk-creds",
	)
	secret, err = e.Virtual.CoreV1().Secrets(csiSecret.Namespace).Get(context.Background(), csiSecret.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range secret.Finalizers {
		if f == kubeoceanv1alpha1.Finalizer(dependentstest.ClusterID) {
			t.Errorf("finalizer still there")
		}
	}
}
