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
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/nametaken"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podidentity"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/podtest"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/preflight"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/references"
	"github.com/kubeocean/kubeocean/pkg/controller"
)

// The test binding, pod and nodes (podtest's).
const (
	testClusterID = podtest.ClusterID
	testBinding   = podtest.BindingUID
	mountNS       = podtest.MountNamespace
	virtualNS     = podtest.VirtualNamespace
	virtualName   = podtest.VirtualName
	virtualNode   = podtest.VirtualNode
	physicalNode  = podtest.PhysicalNode
	virtualUID    = podtest.VirtualUID
	physicalUID   = podtest.PhysicalUID
)

var (
	now          = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	physicalName = podtest.PhysicalName
	podKey       = cache.ObjectName{Namespace: virtualNS, Name: virtualName}
	testOwner    = podtest.Owner
)

// ourNode is a virtual node of the test binding.
func ourNode() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: virtualNode, Labels: map[string]string{
		kubeoceanv1alpha1.LabelManagedBy:        kubeoceanv1alpha1.ManagedByKubeocean,
		kubeoceanv1alpha1.LabelClusterID:        testClusterID,
		kubeoceanv1alpha1.LabelPhysicalNodeName: physicalNode,
	}}}
}

// fakeDependents copies nothing; errs fails the kind/name given.
type fakeDependents struct {
	mu    sync.Mutex
	errs  map[string]error
	calls []string
}

func (f *fakeDependents) ensure(kind, namespace, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, kind+"/"+namespace+"/"+name)
	return kubeoceanv1alpha1.PhysicalName(namespace, name), f.errs[kind+"/"+name]
}

func (f *fakeDependents) EnsureConfigMap(_ context.Context, namespace, name string) (string, error) {
	return f.ensure("ConfigMap", namespace, name)
}

func (f *fakeDependents) EnsureSecret(_ context.Context, namespace, name string) (string, error) {
	return f.ensure("Secret", namespace, name)
}

func (f *fakeDependents) EnsurePVC(_ context.Context, namespace, name string) (string, error) {
	return f.ensure("PersistentVolumeClaim", namespace, name)
}

// fixture is a controller over fake clusters whose informers are never
// started: their indexers are seeded and updated by the test, so the cache
// can disagree with the live cluster on purpose.
type fixture struct {
	t            *testing.T
	virtualKube  *kubefake.Clientset
	physicalKube *kubefake.Clientset
	indexers     map[string]cache.Indexer
	dependents   *fakeDependents
	recorder     *record.FakeRecorder
	clock        *testingclock.FakeClock
	controller   *Controller
	seed         seed

	mu sync.Mutex
	// writes lists the writes to both clusters in order, as "virtual patch
	// pods" or "physical create secrets".
	writes []string
	tokens int
}

type seed struct {
	virtualPods, physicalPods []*corev1.Pod
	// liveVirtual and livePhysical are only in the clusters, not the
	// caches.
	liveVirtual, livePhysical []runtime.Object
	physicalSecrets           []*corev1.Secret
	nodes                     []*corev1.Node
	apiServer                 string
	// mountNamespace, when set, is the cached mount namespace, whose Pod
	// Security labels the controller reads.
	mountNamespace    *corev1.Namespace
	syncDaemonSetPods bool
	// rootCANotCached leaves the virtual kube-root-ca.crt out of the
	// cache; it is always in the virtual cluster.
	rootCANotCached bool
	// predecessors proves earlier bindings; nil proves none.
	predecessors *ownership.Predecessors
	// bindingStatus, when set, receives the binding's condition; the
	// binding is named testBindingName.
	bindingStatus nametaken.BindingStatusWriter
}

func newFixture(t *testing.T, s seed) *fixture {
	t.Helper()
	var virtualObjs, physicalObjs []runtime.Object
	for _, p := range s.virtualPods {
		virtualObjs = append(virtualObjs, p.DeepCopy())
	}
	virtualObjs = append(virtualObjs, s.liveVirtual...)
	rootCA := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: virtualNS, Name: references.RootCAConfigMap},
		Data:       map[string]string{podidentity.KeyCACert: "virtual-ca"},
	}
	virtualObjs = append(virtualObjs, rootCA)
	for _, p := range s.physicalPods {
		physicalObjs = append(physicalObjs, p.DeepCopy())
	}
	for _, sec := range s.physicalSecrets {
		physicalObjs = append(physicalObjs, sec.DeepCopy())
	}
	physicalObjs = append(physicalObjs, s.livePhysical...)

	f := &fixture{
		t:            t,
		virtualKube:  kubefake.NewClientset(virtualObjs...),
		physicalKube: kubefake.NewClientset(physicalObjs...),
		dependents:   &fakeDependents{errs: map[string]error{}},
		recorder:     record.NewFakeRecorder(20),
		clock:        testingclock.NewFakeClock(now),
		seed:         s,
	}
	f.virtualKube.PrependReactor("create", "serviceaccounts", f.issueToken)
	// Prepended last, so it sees every write first.
	f.recordWrites("virtual", f.virtualKube)
	f.recordWrites("physical", f.physicalKube)

	virtual := kubeinformers.NewSharedInformerFactory(f.virtualKube, 0).Core().V1()
	physical := kubeinformers.NewSharedInformerFactory(f.physicalKube, 0).Core().V1()
	c, err := New(Options{
		ClusterID: testClusterID, BindingUID: testBinding, MountNamespace: mountNS, VirtualAPIServer: s.apiServer,
		VirtualClient: f.virtualKube.CoreV1(), PhysicalClient: f.physicalKube.CoreV1(),
		VirtualPods: virtual.Pods(), VirtualNodes: virtual.Nodes(),
		PhysicalPods: physical.Pods(), PhysicalSecrets: physical.Secrets(), VirtualRootCAs: virtual.ConfigMaps(),
		Dependents: f.dependents, Recorder: f.recorder, Clock: f.clock,
		MountNamespaces: physical.Namespaces(), ResourceQuotas: physical.ResourceQuotas(),
		SyncDaemonSetPods: s.syncDaemonSetPods, Predecessors: s.predecessors,
		BindingName: testBindingName, BindingStatus: s.bindingStatus,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.controller = c
	f.indexers = map[string]cache.Indexer{
		"virtualPods": virtual.Pods().Informer().GetIndexer(), "nodes": virtual.Nodes().Informer().GetIndexer(),
		"physicalPods": physical.Pods().Informer().GetIndexer(), "secrets": physical.Secrets().Informer().GetIndexer(),
		"namespaces": physical.Namespaces().Informer().GetIndexer(), "rootCAs": virtual.ConfigMaps().Informer().GetIndexer(),
	}
	if !s.rootCANotCached {
		f.cache("rootCAs", rootCA)
	}
	if s.mountNamespace != nil {
		f.cache("namespaces", s.mountNamespace)
	}
	nodes := s.nodes
	if nodes == nil {
		nodes = []*corev1.Node{ourNode()}
	}
	for _, n := range nodes {
		f.cache("nodes", n)
	}
	for _, p := range s.virtualPods {
		f.cache("virtualPods", p)
	}
	for _, p := range s.physicalPods {
		f.cache("physicalPods", p)
	}
	for _, sec := range s.physicalSecrets {
		f.cache("secrets", sec)
	}
	return f
}

func (f *fixture) recordWrites(cluster string, client *kubefake.Clientset) {
	client.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "get", "list", "watch":
		default:
			f.mu.Lock()
			f.writes = append(f.writes, cluster+" "+describe(action))
			f.mu.Unlock()
		}
		return false, nil, nil
	})
}

// issueToken answers TokenRequests as the apiserver would: a new token
// per request, valid for the requested time.
func (f *fixture) issueToken(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "token" {
		return false, nil, nil
	}
	request := action.(clienttesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
	f.mu.Lock()
	f.tokens++
	request.Status.Token = fmt.Sprintf("token-%d", f.tokens)
	f.mu.Unlock()
	request.Status.ExpirationTimestamp = metav1.NewTime(f.clock.Now().Add(time.Duration(*request.Spec.ExpirationSeconds) * time.Second))
	return true, request, nil
}

func describe(action clienttesting.Action) string {
	s := action.GetVerb() + " " + action.GetResource().Resource
	if action.GetSubresource() != "" {
		s += "/" + action.GetSubresource()
	}
	return s
}

// cache puts obj into the named indexer, as an informer would.
func (f *fixture) cache(indexer string, obj runtime.Object) {
	f.t.Helper()
	if err := f.indexers[indexer].Update(cachedForm(indexer, obj.DeepCopyObject())); err != nil {
		f.t.Fatal(err)
	}
}

// cachedForm is obj as the informer behind indexer stores it: the syncer's
// token Secret cache keeps records (podidentity.CompactTokenSecret).
func cachedForm(indexer string, obj runtime.Object) any {
	if indexer != "secrets" {
		return obj
	}
	out, _ := podidentity.CompactTokenSecret(obj)
	return out
}

func (f *fixture) uncache(indexer string, obj runtime.Object) {
	f.t.Helper()
	if err := f.indexers[indexer].Delete(obj); err != nil {
		f.t.Fatal(err)
	}
}

// syncCaches makes every cache show what the fake clusters hold, as the
// informers would once their events arrived.
func (f *fixture) syncCaches() {
	f.t.Helper()
	ctx := context.Background()
	replace := func(indexer string, objs []runtime.Object) {
		if err := f.indexers[indexer].Replace(toAny(objs), ""); err != nil {
			f.t.Fatal(err)
		}
	}
	vp, err := f.virtualKube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	pp, err := f.physicalKube.CoreV1().Pods(mountNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	ps, err := f.physicalKube.CoreV1().Secrets(mountNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	replace("virtualPods", podObjects(vp.Items))
	replace("physicalPods", podObjects(pp.Items))
	var secrets []any
	for i := range ps.Items {
		secrets = append(secrets, cachedForm("secrets", &ps.Items[i]))
	}
	if err := f.indexers["secrets"].Replace(secrets, ""); err != nil {
		f.t.Fatal(err)
	}
	f.virtualKube.ClearActions()
	f.physicalKube.ClearActions()
}

func podObjects(pods []corev1.Pod) []runtime.Object {
	out := make([]runtime.Object, 0, len(pods))
	for i := range pods {
		out = append(out, &pods[i])
	}
	return out
}

func toAny(objs []runtime.Object) []any {
	out := make([]any, 0, len(objs))
	for _, o := range objs {
		out = append(out, o)
	}
	return out
}

func (f *fixture) reconcile() (controller.Result, error) {
	f.t.Helper()
	_, ctx := ktesting.NewTestContext(f.t)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return f.controller.reconcile(ctx, podKey)
}

// mustReconcile reconciles and fails the test on an error.
func (f *fixture) mustReconcile() controller.Result {
	f.t.Helper()
	result, err := f.reconcile()
	if err != nil {
		f.t.Fatalf("reconcile: %v", err)
	}
	return result
}

// takeWrites returns the writes since the last call.
func (f *fixture) takeWrites() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.writes
	f.writes = nil
	return out
}

// actions of a fake client that match verb and resource ("pods",
// "pods/status").
func actions(client *kubefake.Clientset, verb, resource string) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && strings.TrimSuffix(describe(a), " ") == verb+" "+resource {
			out = append(out, a)
		}
	}
	return out
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (f *fixture) virtualPod() *corev1.Pod {
	f.t.Helper()
	pod, err := f.virtualKube.CoreV1().Pods(virtualNS).Get(context.Background(), virtualName, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return pod
}

func (f *fixture) physicalPod() (*corev1.Pod, error) {
	return f.physicalKube.CoreV1().Pods(mountNS).Get(context.Background(), physicalName, metav1.GetOptions{})
}

// react puts a reactor right after the write recorder, so the writes it
// answers are still recorded.
func (f *fixture) react(client *kubefake.Clientset, verb, resource string, fn clienttesting.ReactionFunc) {
	reactor := &clienttesting.SimpleReactor{Verb: verb, Resource: resource, Reaction: fn}
	client.ReactionChain = slices.Insert(client.ReactionChain, 1, clienttesting.Reactor(reactor))
}

// failOnce is a reaction that fails the first request it sees with err
// and lets the following ones through.
func failOnce(err error) clienttesting.ReactionFunc {
	failed := false
	return func(clienttesting.Action) (bool, runtime.Object, error) {
		if failed {
			return false, nil, nil
		}
		failed = true
		return true, nil, err
	}
}

func invalidPod() error {
	return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, physicalName,
		field.ErrorList{field.Invalid(field.NewPath("spec", "containers"), "x", "not allowed here")})
}

// setPreflight rebuilds the controller's pre-flight checks as New builds
// them, changed by change; the memory of refused pods stays.
func (f *fixture) setPreflight(change func(*preflight.Options)) {
	f.t.Helper()
	opts := preflight.Options{
		MountNamespace: mountNS, Namespaces: corev1listers.NewNamespaceLister(f.indexers["namespaces"]),
		SyncDaemonSetPods: f.seed.syncDaemonSetPods, Allowances: f.controller.allowances,
	}
	opts.Claims, _ = f.controller.dependents.(preflight.ClaimVolumes)
	change(&opts)
	gate, err := preflight.New(opts)
	if err != nil {
		f.t.Fatal(err)
	}
	gate.Memory = f.controller.preflight.Memory
	f.controller.preflight = gate
}
