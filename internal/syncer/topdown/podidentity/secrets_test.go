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

package podidentity

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

const (
	testClusterID = "c1"
	testBinding   = types.UID("binding-uid")
	mountNS       = "mount"
	physicalName  = "web-0123"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func TestRefreshTime(t *testing.T) {
	tests := []struct {
		name     string
		lifetime time.Duration
		want     time.Duration
	}{
		{name: "80% of an hour", lifetime: time.Hour, want: 48 * time.Minute},
		{name: "capped at a day", lifetime: 30 * 24 * time.Hour, want: 24 * time.Hour},
		{name: "expired already", lifetime: -time.Minute, want: 0},
	}
	for _, tt := range tests {
		if got := refreshTime(now, now.Add(tt.lifetime)).Sub(now); got != tt.want {
			t.Errorf("%s: refresh after %v, want %v", tt.name, got, tt.want)
		}
	}
}

// tokenPod mounts a service-account token and reads its name and labels.
func tokenPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web", UID: "virtual-uid", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "vault", Audience: "vault", ExpirationSeconds: ptr.To[int64](600)}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: rootCAConfigMap}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
					{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
					{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
				}}},
			},
		}}}}},
	}
}

func TestPlanFor(t *testing.T) {
	plan := PlanFor(tokenPod())
	want := Plan{
		tokens: []tokenSpec{{key: "token", expirationSeconds: 3600}, {key: "token-1", audience: "vault", expirationSeconds: 600}},
		caCert: true,
		fields: []string{"metadata.labels", "metadata.name"},
	}
	if !reflect.DeepEqual(want, plan) {
		t.Errorf("plan = %+v, want %+v", plan, want)
	}
	if keys := plan.Keys(); !slices.Equal(keys, []string{"token", "token-1", "ca.crt", "metadata.labels", "metadata.name"}) {
		t.Errorf("keys = %v", keys)
	}
	if !PlanFor(&corev1.Pod{}).Empty() {
		t.Errorf("a pod without token or identity volumes needs a token Secret")
	}
}

// fixture is a binding's token Secrets with fake clusters and a cache
// filled by hand.
type fixture struct {
	secrets  *Secrets
	virtual  *kubefake.Clientset
	physical *kubefake.Clientset
	cache    cache.Indexer
	clock    *testingclock.FakeClock
	tokens   int
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{
		virtual: kubefake.NewClientset(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: rootCAConfigMap}, Data: map[string]string{KeyCACert: "virtual-ca"},
		}),
		physical: kubefake.NewClientset(),
		cache:    cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}),
	}
	f.clock = testingclock.NewFakeClock(now)
	clock := f.clock
	f.virtual.PrependReactor("create", "serviceaccounts", func(action clienttesting.Action) (bool, runtime.Object, error) {
		request := action.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		f.tokens++
		request.Status.Token = fmt.Sprintf("token-%d", f.tokens)
		request.Status.ExpirationTimestamp = metav1.NewTime(clock.Now().Add(time.Duration(*request.Spec.ExpirationSeconds) * time.Second))
		return true, request, nil
	})
	f.secrets = New(Options{
		MountNamespace: mountNS, Owner: ownership.Owner{ClusterID: testClusterID, BindingUID: testBinding},
		Virtual: f.virtual.CoreV1(), Physical: f.physical.CoreV1(), Cache: f.cache,
		Recorder: record.NewFakeRecorder(10), Clock: clock,
	})
	return f
}

func (f *fixture) writes() []string {
	var writes []string
	for _, a := range f.physical.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			writes = append(writes, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	return writes
}

// The Secret made holds the pod's tokens, CA and fields, records the pod
// and when its tokens are due; a second pass before its event sends
// nothing; the pass that finds it due renews it.
func TestEnsureMakesAndRenews(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	pod := tokenPod()
	plan := PlanFor(pod)
	wait, err := f.secrets.Ensure(ctx, pod, physicalName, plan)
	if want := 480 * time.Second; err != nil || wait != want {
		t.Fatalf("Ensure = %v, %v; want %v", wait, err, want)
	}
	secret, err := f.physical.CoreV1().Secrets(mountNS).Get(context.Background(), SecretName(physicalName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"token": "token-1", "token-1": "token-2", "ca.crt": "virtual-ca", "metadata.name": "web", "metadata.labels": `app="web"`}
	for key, value := range want {
		if string(secret.Data[key]) != value {
			t.Errorf("data[%s] = %q, want %q", key, secret.Data[key], value)
		}
	}
	if secret.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != "virtual-uid" || secret.Labels[kubeoceanv1alpha1.LabelPodToken] != "true" ||
		secret.Annotations[kubeoceanv1alpha1.AnnotationTokenRefreshAt] != now.Add(480*time.Second).Format(time.RFC3339) {
		t.Errorf("secret metadata = %v, %v", secret.Labels, secret.Annotations)
	}
	f.physical.ClearActions()
	if _, err := f.secrets.Ensure(ctx, pod, physicalName, plan); err != nil || len(f.physical.Actions()) != 0 {
		t.Errorf("a second pass before the Secret's event: %v, actions %v; want none", err, f.writes())
	}
	// The informer shows the Secret; the memory of it has run out by then.
	if err := f.cache.Add(secret); err != nil {
		t.Fatal(err)
	}
	f.clock.Step(480 * time.Second)
	if _, err := f.secrets.Ensure(ctx, pod, physicalName, plan); err != nil || !slices.Equal(f.writes(), []string{"update secrets"}) {
		t.Errorf("the pass at the refresh time: %v, writes %v; want one update", err, f.writes())
	}
	if f.tokens != 4 {
		t.Errorf("%d tokens issued, want 2 at the create and 2 at the renewal", f.tokens)
	}
}

// storeEventDuringGet is a token Secret store whose lookups miss just
// before the Secret's event arrives: the store was read, then the event
// came.
type storeEventDuringGet struct {
	cache.Indexer
	arrive func()
}

func (s storeEventDuringGet) GetByKey(key string) (any, bool, error) {
	obj, exists, err := s.Indexer.GetByKey(key)
	if err == nil && !exists {
		s.arrive()
	}
	return obj, exists, err
}

// The token Secret's event may arrive between the cache's miss and the
// look at what was just created: the pass still sends nothing (no
// AlreadyExists, no live read).
func TestCreatedSecretEventDuringTheLookup(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t)
	pod := tokenPod()
	if _, err := f.secrets.Ensure(ctx, pod, physicalName, PlanFor(pod)); err != nil {
		t.Fatal(err)
	}
	created, err := f.physical.CoreV1().Secrets(mountNS).Get(context.Background(), SecretName(physicalName), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.physical.ClearActions()
	arrived := false
	f.secrets.Cache = storeEventDuringGet{f.cache, func() {
		if !arrived {
			arrived = true
			f.secrets.Seen(created)
		}
	}}
	if _, err := f.secrets.Ensure(ctx, pod, physicalName, PlanFor(pod)); err != nil {
		t.Fatal(err)
	}
	if !arrived {
		t.Fatal("the pass did not look the token Secret up in the cache")
	}
	if len(f.physical.Actions()) != 0 {
		t.Errorf("actions %v, want none", f.writes())
	}
}

func TestMetadataValue(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		kubeoceanv1alpha1.AnnotationPhysicalPodName: "x", kubeoceanv1alpha1.AnnotationPhysicalPodNamespace: "y",
	}}}
	pod.Labels = map[string]string{"b": `say "hi"`, "a": "1", "example.com/x": "ünï\n"}
	pod.Annotations["k8s.v1.cni.cncf.io/networks"] = "macvlan"
	for path, want := range map[string]string{
		// As the kubelet writes a map: sorted, one key="value" a line,
		// Go-quoted, no final newline.
		"metadata.labels": `a="1"` + "\n" + `b="say \"hi\""` + "\n" + `example.com/x="ünï\n"`,
		// The mapping Kubeocean records on the virtual pod is ours, not
		// the pod's.
		"metadata.annotations":                                                        `k8s.v1.cni.cncf.io/networks="macvlan"`,
		"metadata.annotations['k8s.v1.cni.cncf.io/networks']":                         "macvlan",
		"metadata.annotations['missing']":                                             "",
		"metadata.annotations['" + kubeoceanv1alpha1.AnnotationPhysicalPodName + "']": "",
	} {
		if got := Value(pod, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	for _, path := range []string{"metadata.labels", "metadata.annotations", "metadata.annotations['example.com/x']", "metadata.name"} {
		if errs := validation.IsConfigMapKey(SecretKey(path)); len(errs) > 0 {
			t.Errorf("SecretKey(%q) = %q: %v", path, SecretKey(path), errs)
		}
	}
	if SecretKey("metadata.annotations['a']") == SecretKey("metadata.annotations['b']") {
		t.Error("two annotations share a Secret key")
	}
}
