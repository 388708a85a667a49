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
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
)

// A token not yet due is left alone until it is; then it is renewed with
// one token request and one Secret update.
func TestTokenRefresh(t *testing.T) {
	virtual := withTokenVolume(podtest.Mapped(podtest.BoundPod(), physicalUID))
	// Someone else's finalizer, which the renewal, a write of the whole
	// Secret, keeps.
	secret := tokenSecret(virtualUID, now.Add(10*time.Minute))
	secret.Finalizers = []string{"example.com/audit"}
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physicalFor(virtual)},
		physicalSecrets: []*corev1.Secret{secret}})
	if result := f.mustReconcile(); result.RequeueAfter != 10*time.Minute {
		t.Errorf("RequeueAfter = %v, want 10m", result.RequeueAfter)
	}
	assertWrites(t, f)

	f.clock.Step(11 * time.Minute)
	result := f.mustReconcile()
	assertWrites(t, f, "virtual create serviceaccounts/token", "physical update secrets")
	if want := 3600 * time.Second * 8 / 10; result.RequeueAfter != want {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, want)
	}
	secret, err := f.physicalKube.CoreV1().Secrets(mountNS).Get(context.Background(), podidentity.SecretName(physicalName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["token"]) != "token-1" || !slices.Equal(secret.Finalizers, []string{"example.com/audit"}) {
		t.Errorf("token = %q, finalizers %q; want the new token and the finalizer", secret.Data["token"], secret.Finalizers)
	}
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f)
}

// A token Secret left by an earlier virtual pod of the same name, or one
// missing a key, is reissued at once.
func TestTokenSecretReissued(t *testing.T) {
	for name, secret := range map[string]*corev1.Secret{
		"other virtual pod": tokenSecret("earlier-uid", now.Add(time.Hour)),
		"key missing": func() *corev1.Secret {
			s := tokenSecret(virtualUID, now.Add(time.Hour))
			delete(s.Data, "ca.crt")
			return s
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			virtual := withTokenVolume(podtest.Mapped(podtest.BoundPod(), physicalUID))
			f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physicalFor(virtual)},
				physicalSecrets: []*corev1.Secret{secret}})
			f.mustReconcile()
			assertWrites(t, f, "virtual create serviceaccounts/token", "physical update secrets")
		})
	}
}

// A physical pod that finished needs no fresh token.
func TestNoTokenRefreshForFinishedPod(t *testing.T) {
	virtual := withTokenVolume(podtest.Mapped(podtest.BoundPod(), physicalUID))
	physical := physicalFor(virtual)
	physical.Status.Phase = corev1.PodSucceeded
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physical},
		physicalSecrets: []*corev1.Secret{tokenSecret(virtualUID, now.Add(-time.Minute))}})
	if result := f.mustReconcile(); result.RequeueAfter != 0 {
		t.Errorf("RequeueAfter = %v, want 0", result.RequeueAfter)
	}
	assertWrites(t, f)
}

// A deleted token Secret of a running pod is made again.
func TestTokenSecretRecreated(t *testing.T) {
	virtual := withTokenVolume(podtest.Mapped(podtest.BoundPod(), physicalUID))
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{virtual}, physicalPods: []*corev1.Pod{physicalFor(virtual)}})
	f.mustReconcile()
	assertWrites(t, f, "virtual create serviceaccounts/token", "physical create secrets")
}

// The CA a token Secret holds comes from the cache of kube-root-ca.crt:
// no live read per pod. A namespace the cache does not show yet is read
// live.
func TestTokenCAFromCache(t *testing.T) {
	for _, cached := range []bool{true, false} {
		f := newFixture(t, seed{virtualPods: []*corev1.Pod{withTokenVolume(podtest.BoundPod())}, rootCANotCached: !cached})
		f.mustReconcile()
		assertCreatedWithToken(t, f)
		secret, err := f.physicalKube.CoreV1().Secrets(mountNS).Get(context.Background(), podidentity.SecretName(physicalName), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(secret.Data[podidentity.KeyCACert]); got != "virtual-ca" {
			t.Errorf("cached %v: ca.crt = %q, want the virtual cluster's", cached, got)
		}
		if reads := len(actions(f.virtualKube, "get", "configmaps")); cached && reads != 0 || !cached && reads != 1 {
			t.Errorf("cached %v: %d live reads of configmaps", cached, reads)
		}
	}
}

// createdWithTokenSecretUncached creates a pod with a token volume and
// lets the caches show the virtual and the physical pod, not the token
// Secret made for it.
func createdWithTokenSecretUncached(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{withTokenVolume(podtest.BoundPod())}})
	f.mustReconcile()
	assertCreatedWithToken(t, f)
	pod, err := f.physicalPod()
	if err != nil {
		t.Fatal(err)
	}
	f.cache("virtualPods", f.virtualPod())
	f.cache("physicalPods", pod)
	return f
}

// The physical pod's event often comes before the token Secret's: the pass
// it brings finds the Secret it created a moment ago not in the cache, and
// neither creates it again (an AlreadyExists, a live read and a renewal)
// nor renews it.
func TestCreatedTokenSecretAwaitedInCache(t *testing.T) {
	f := createdWithTokenSecretUncached(t)
	refreshAt := now.Add(3600 * time.Second * 8 / 10)
	if result, want := f.mustReconcile(), refreshAt.Truncate(time.Second).Sub(now); result.RequeueAfter != want {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, want)
	}
	assertWrites(t, f)
	if reads := len(actions(f.physicalKube, "get", "secrets")); reads != 0 {
		t.Errorf("%d live reads of secrets, want none", reads)
	}

	// Once the cache shows it, it is read from there; when it is due, it
	// is renewed as any other.
	f.syncCaches()
	f.clock.Step(refreshAt.Sub(now) + time.Second)
	f.mustReconcile()
	assertWrites(t, f, "virtual create serviceaccounts/token", "physical update secrets")
}

// A token Secret deleted before the cache showed it is created again once
// its events come: from then on the cache, not the memory of the create,
// speaks for it.
func TestCreatedTokenSecretDeletedBeforeCached(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{withTokenVolume(podtest.BoundPod())}})
	f.mustReconcile()
	assertCreatedWithToken(t, f)
	secrets := f.physicalKube.CoreV1().Secrets(mountNS)
	created, err := secrets.Get(context.Background(), podidentity.SecretName(physicalName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(context.Background(), created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.takeWrites()
	// Its add and delete events arrive.
	if keys := f.controller.tokenSecretKeys(created); len(keys) != 1 || keys[0].Name != virtualName {
		t.Fatalf("keys = %v, want the virtual pod", keys)
	}
	f.syncCaches()
	f.mustReconcile()
	assertWrites(t, f, "virtual create serviceaccounts/token", "physical create secrets")
}

// A failed TokenRequest makes no physical pod and writes nothing to the
// virtual pod; the retry issues the token and creates the pod.
func TestTokenFailureMakesNoPhysicalPod(t *testing.T) {
	f := newFixture(t, seed{virtualPods: []*corev1.Pod{withTokenVolume(podtest.BoundPod())}})
	f.react(f.virtualKube, "create", "serviceaccounts", failOnce(apierrors.NewServiceUnavailable("token issuer down")))
	if _, err := f.reconcile(); err == nil {
		t.Fatal("reconcile succeeded while the TokenRequest failed")
	}
	assertWrites(t, f, "virtual create serviceaccounts/token")
	f.syncCaches()
	f.mustReconcile()
	assertCreatedWithToken(t, f)
}
