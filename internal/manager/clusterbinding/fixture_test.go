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

package clusterbinding

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceaninformerfactory "github.com/kubeocean/kubeocean/generated/informers/externalversions"
	"github.com/kubeocean/kubeocean/internal/manager/connectivity"
	"github.com/kubeocean/kubeocean/internal/manager/syncers"
	"github.com/kubeocean/kubeocean/internal/testing/fixtures"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

var start = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// fakeChecker answers checks with failure (nil: success) and counts them.
type fakeChecker struct {
	mu        sync.Mutex
	failure   *connectivity.Failure
	checks    int
	probes    int
	forgotten []string
	uid       string
	claims    map[string]connectivity.Claim
}

func (c *fakeChecker) Check(context.Context, *kubeoceanv1alpha1.ClusterBindingSpec) *connectivity.Failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks++
	return c.failure
}

// Answers: a cluster answers unless the failure says it does not.
func (c *fakeChecker) Answers(context.Context, *kubeoceanv1alpha1.ClusterBindingSpec) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.probes++
	return c.failure == nil || c.failure.Reason != kubeoceanv1alpha1.ReasonUnreachable
}

// Identity answers with the cluster's uid ("cluster-a" unless set).
func (c *fakeChecker) Identity(context.Context, *kubeoceanv1alpha1.ClusterBindingSpec) (string, *connectivity.Failure) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.uid == "" {
		return "cluster-a", nil
	}
	return c.uid, nil
}

// ClaimMountNamespace records the claims per mount namespace, first come
// first served, as the physical cluster's ConfigMap does.
func (c *fakeChecker) ClaimMountNamespace(_ context.Context, spec *kubeoceanv1alpha1.ClusterBindingSpec, claim connectivity.Claim) *connectivity.Failure {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claims == nil {
		c.claims = map[string]connectivity.Claim{}
	}
	held, ok := c.claims[spec.MountNamespace]
	if ok && (held.VirtualCluster != claim.VirtualCluster || held.Binding != claim.Binding) {
		return &connectivity.Failure{Reason: kubeoceanv1alpha1.ReasonMountNamespaceTaken, Message: "taken by " + held.Binding}
	}
	c.claims[spec.MountNamespace] = claim
	return nil
}

func (c *fakeChecker) Forget(namespace, name string) {
	c.forgotten = append(c.forgotten, namespace+"/"+name)
}

func (c *fakeChecker) fail(f *connectivity.Failure) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failure = f
}

// fakeRunner is a syncer runner whose state the test sets.
type fakeRunner struct {
	state   syncers.State
	running map[string]bool
	gone    bool
	ensured []string // binding/kubeconfigHash per Ensure
	removed []string
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{state: syncers.State{Phase: syncers.PhaseReady, Reason: kubeoceanv1alpha1.ReasonSyncerRunning, Message: "runs"}, running: map[string]bool{}, gone: true}
}

func (r *fakeRunner) Ensure(_ context.Context, b *kubeoceanv1alpha1.ClusterBinding, hash string) (syncers.State, error) {
	r.ensured = append(r.ensured, b.Name+"/"+hash)
	r.running[b.Name] = true
	return r.state, nil
}

func (r *fakeRunner) Observe(b *kubeoceanv1alpha1.ClusterBinding) (syncers.State, bool) {
	return r.state, r.running[b.Name]
}

func (r *fakeRunner) Remove(_ context.Context, b *kubeoceanv1alpha1.ClusterBinding) (bool, error) {
	r.removed = append(r.removed, b.Name)
	if r.gone {
		delete(r.running, b.Name)
	}
	return r.gone, nil
}

func (r *fakeRunner) HasSynced() bool { return true }
func (r *fakeRunner) Running() int    { return len(r.running) }

// fixture is a controller over fake clients whose caches are seeded by
// hand, so a test decides exactly what each reconcile sees.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	bindings cache.Indexer
	secrets  cache.Indexer
	watches  *fakeSecrets
	checker  *fakeChecker
	runner   *fakeRunner
	recorder *record.FakeRecorder
	clock    *clocktesting.FakeClock
	c        *Controller
}

func newFixture(t *testing.T, bindings []*kubeoceanv1alpha1.ClusterBinding, secrets ...*corev1.Secret) *fixture {
	t.Helper()
	objects := make([]runtime.Object, len(bindings))
	for i, b := range bindings {
		objects[i] = b
	}
	f := &fixture{
		t: t, client: fake.NewClientset(objects...), checker: &fakeChecker{}, runner: newFakeRunner(),
		recorder: record.NewFakeRecorder(100), clock: clocktesting.NewFakeClock(start),
	}
	_, f.ctx = ktesting.NewTestContext(t)
	f.c = f.newController()
	for _, b := range bindings {
		fixtures.MustAdd(f.t, f.bindings, b)
	}
	for _, s := range secrets {
		fixtures.MustAdd(f.t, f.secrets, s)
	}
	return f
}

// newController builds a controller over the fixture's clients, as a
// restarted manager would; the caches start empty.
func (f *fixture) newController() *Controller {
	f.t.Helper()
	oceanFactory := kubeoceaninformerfactory.NewSharedInformerFactory(f.client, 0)
	bindingInformer := oceanFactory.Kubeocean().V1alpha1().ClusterBindings()
	f.watches = &fakeSecrets{Indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), unsynced: map[cache.ObjectName]bool{}}
	c, err := New(Options{
		Client: f.client.KubeoceanV1alpha1(), Bindings: bindingInformer, Secrets: f.watches,
		Checker: f.checker, Syncers: f.runner, Recorder: f.recorder, Clock: f.clock,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.bindings, f.secrets = bindingInformer.Informer().GetIndexer(), f.watches.Indexer
	return c
}

// fakeSecrets stands for the Secret watches: Secrets are added to its
// indexer by hand; every Secret watched is synced unless listed unsynced.
type fakeSecrets struct {
	cache.Indexer
	watched  []cache.ObjectName
	unsynced map[cache.ObjectName]bool
	events   cache.ResourceEventHandler
	synced   func(cache.ObjectName)
}

func (s *fakeSecrets) AddEventHandler(events cache.ResourceEventHandler, synced func(cache.ObjectName)) error {
	s.events, s.synced = events, synced
	return nil
}

func (s *fakeSecrets) Watch(keys []cache.ObjectName) {
	s.watched = slices.Clone(keys)
	slices.SortFunc(s.watched, func(a, b cache.ObjectName) int { return strings.Compare(a.String(), b.String()) })
}

func (s *fakeSecrets) Synced(key cache.ObjectName) bool {
	return slices.Contains(s.watched, key) && !s.unsynced[key]
}

func (s *fakeSecrets) Get(namespace, name string) (*corev1.Secret, error) {
	if !s.Synced(cache.ObjectName{Namespace: namespace, Name: name}) {
		return nil, fmt.Errorf("secret %s/%s is not watched yet", namespace, name)
	}
	obj, exists, err := s.GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
	}
	return obj.(*corev1.Secret), nil
}

// reconcile runs one reconcile and returns its result, its error and the
// writes it made; the writes are fed back into the cache, as the informer
// would.
func (f *fixture) reconcile(name string) (controller.Result, error, []clienttesting.Action) {
	f.t.Helper()
	f.client.ClearActions()
	result, err := f.c.reconcile(f.ctx, name)
	actions := f.client.Actions()
	for _, a := range actions {
		if update, ok := a.(clienttesting.UpdateAction); ok {
			if err := f.bindings.Update(update.GetObject()); err != nil {
				f.t.Fatal(err)
			}
		}
	}
	return result, err, actions
}

func (f *fixture) cached(name string) *kubeoceanv1alpha1.ClusterBinding {
	f.t.Helper()
	obj, exists, err := f.bindings.GetByKey(name)
	if err != nil || !exists {
		f.t.Fatalf("binding %s not cached: %v", name, err)
	}
	return obj.(*kubeoceanv1alpha1.ClusterBinding)
}

func newBinding(name, clusterID string) *kubeoceanv1alpha1.ClusterBinding {
	return &kubeoceanv1alpha1.ClusterBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Generation: 1, ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(start.Add(-time.Hour))},
		Spec: kubeoceanv1alpha1.ClusterBindingSpec{
			ClusterID: clusterID, MountNamespace: "mount-" + clusterID,
			SecretRef: kubeoceanv1alpha1.SecretReference{Namespace: "kubeocean-system", Name: name + "-kubeconfig"},
		},
	}
}

// bound is a binding past its first reconciles: finalizer and phase set.
func bound(b *kubeoceanv1alpha1.ClusterBinding) *kubeoceanv1alpha1.ClusterBinding {
	b.Finalizers = append(b.Finalizers, managerFinalizer)
	b.Status.Phase = kubeoceanv1alpha1.ClusterBindingPending
	return b
}

func kubeconfigSecret(b *kubeoceanv1alpha1.ClusterBinding, content string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: b.Spec.SecretRef.Namespace, Name: b.Spec.SecretRef.Name, ResourceVersion: "1"},
		Data:       map[string][]byte{"kubeconfig": []byte(content)},
	}
}

func verbs(actions []clienttesting.Action) []string {
	var got []string
	for _, a := range actions {
		verb := a.GetVerb()
		if a.GetSubresource() != "" {
			verb += "/" + a.GetSubresource()
		}
		got = append(got, verb)
	}
	return got
}

func (f *fixture) mustUpdate(obj any) {
	f.t.Helper()
	if err := f.bindings.Update(obj); err != nil {
		f.t.Fatal(err)
	}
}
