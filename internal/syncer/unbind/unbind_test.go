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

package unbind

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanfake "github.com/kubeocean/kubeocean/generated/clientset/versioned/fake"
	kubeoceaninformers "github.com/kubeocean/kubeocean/generated/informers/externalversions"
	"github.com/kubeocean/kubeocean/internal/hostports"
	"github.com/kubeocean/kubeocean/internal/ownership"
)

const (
	bindingName = "worker-1"
	clusterID   = "cls-1"
	bindingUID  = types.UID("binding-uid")
	mount       = "mount"
)

// owner is the identity of the binding's physical objects; otherBinding a
// binding of another virtual cluster with the same cluster ID, sharing
// the physical cluster and the mount namespace.
var (
	owner        = ownership.Owner{ClusterID: clusterID, BindingUID: bindingUID}
	otherBinding = ownership.Owner{ClusterID: clusterID, BindingUID: "other-binding-uid"}
)

type fixture struct {
	c                                   *Controller
	virtualKube, physicalKube           *kubefake.Clientset
	virtualOcean, physicalOcean         *kubeoceanfake.Clientset
	bindings, nodes, policies, podStore interface{ Add(any) error }
	recorder                            *record.FakeRecorder
}

func newFixture(t *testing.T, binding *kubeoceanv1alpha1.ClusterBinding, virtualObjs, physicalObjs []runtime.Object, policies ...*kubeoceanv1alpha1.ResourceLeasingPolicy) *fixture {
	t.Helper()
	var physicalOceanObjs []runtime.Object
	for _, p := range policies {
		physicalOceanObjs = append(physicalOceanObjs, p)
	}
	f := &fixture{
		virtualKube: kubefake.NewClientset(virtualObjs...), physicalKube: kubefake.NewClientset(physicalObjs...),
		// The simple clientsets: merge patches on CRDs need no OpenAPI schema there.
		virtualOcean: kubeoceanfake.NewSimpleClientset(binding), physicalOcean: kubeoceanfake.NewSimpleClientset(physicalOceanObjs...),
	}
	vOcean := kubeoceaninformers.NewSharedInformerFactory(f.virtualOcean, 0)
	pOcean := kubeoceaninformers.NewSharedInformerFactory(f.physicalOcean, 0)
	vKube := kubeinformers.NewSharedInformerFactory(f.virtualKube, 0)
	pKube := kubeinformers.NewSharedInformerFactory(f.physicalKube, 0)
	opts := Options{
		BindingName: bindingName, ClusterID: clusterID, BindingUID: bindingUID, MountNamespace: mount,
		VirtualKube: f.virtualKube, PhysicalKube: f.physicalKube,
		VirtualKubeocean: f.virtualOcean, PhysicalKubeocean: f.physicalOcean,
		Bindings:     vOcean.Kubeocean().V1alpha1().ClusterBindings(),
		VirtualNodes: vKube.Core().V1().Nodes(),
		Policies:     pOcean.Kubeocean().V1alpha1().ResourceLeasingPolicies(),
		ManagedPods:  pKube.Core().V1().Pods(),
		Recorder:     record.NewFakeRecorder(10),
	}
	f.recorder = opts.Recorder.(*record.FakeRecorder)
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.bindings = opts.Bindings.Informer().GetIndexer()
	f.nodes = opts.VirtualNodes.Informer().GetIndexer()
	f.policies = opts.Policies.Informer().GetIndexer()
	f.podStore = opts.ManagedPods.Informer().GetIndexer()
	if err := f.bindings.Add(binding); err != nil {
		t.Fatal(err)
	}
	for _, p := range policies {
		if err := f.policies.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) binding(t *testing.T) *kubeoceanv1alpha1.ClusterBinding {
	t.Helper()
	b, err := f.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(context.Background(), bindingName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newBinding(deleting bool, finalizers ...string) *kubeoceanv1alpha1.ClusterBinding {
	b := &kubeoceanv1alpha1.ClusterBinding{ObjectMeta: metav1.ObjectMeta{Name: bindingName, UID: bindingUID, Finalizers: finalizers, ResourceVersion: "1"}}
	if deleting {
		b.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	}
	return b
}

func TestAddsTheSyncerFinalizerOnce(t *testing.T) {
	f := newFixture(t, newBinding(false, kubeoceanv1alpha1.FinalizerClusterBindingManager), nil, nil)
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	got := f.binding(t).Finalizers
	if !slices.Equal(got, []string{kubeoceanv1alpha1.FinalizerClusterBindingManager, kubeoceanv1alpha1.FinalizerClusterBindingSyncer}) {
		t.Fatalf("finalizers = %v", got)
	}
	if err := f.bindings.Add(f.binding(t)); err != nil {
		t.Fatal(err)
	}
	f.virtualOcean.ClearActions()
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	if n := len(f.virtualOcean.Actions()); n != 0 {
		t.Fatalf("%d writes on the second reconcile", n)
	}
}

func TestUnbindingWaitsThenSweepsAndReleases(t *testing.T) {
	syncedLabels := map[string]string{
		kubeoceanv1alpha1.LabelManagedBy:           kubeoceanv1alpha1.ManagedByKubeocean,
		kubeoceanv1alpha1.SyncedByLabel(clusterID): "true",
	}
	virtualCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "settings", Labels: syncedLabels,
		Finalizers:  []string{kubeoceanv1alpha1.Finalizer(clusterID), "someone.else/keep"},
		Annotations: map[string]string{kubeoceanv1alpha1.AnnotationPhysicalName: "settings-abc", "user": "note"}}}
	physicalCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "settings-abc", Labels: owner.Stamp(nil)}}
	otherBinding := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other-mount", Name: "x", Labels: owner.Stamp(nil)}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-abc", Labels: owner.Stamp(nil)},
		Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: mount, Name: "data-abc"}}}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "1",
		Finalizers: []string{kubeoceanv1alpha1.FinalizerResourceLeasingPolicy}}, Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: bindingName, MountNamespace: mount}}
	f := newFixture(t, newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingManager, kubeoceanv1alpha1.FinalizerClusterBindingSyncer),
		[]runtime.Object{virtualCM}, []runtime.Object{physicalCM, otherBinding, pv}, policy)

	// A virtual node is still there: wait, touch nothing.
	vnode := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vnode-cls-1-a"}}
	if err := f.nodes.Add(vnode); err != nil {
		t.Fatal(err)
	}
	result, err := f.c.sync(t.Context(), bindingName)
	if err != nil || result.RequeueAfter != progressRecheck {
		t.Fatalf("sync = %v, %v; want a recheck while nodes remain", result, err)
	}
	if n := len(f.physicalKube.Actions()) + len(f.virtualOcean.Actions()); n != 0 {
		t.Fatalf("%d actions while waiting", n)
	}

	if err := f.nodes.(interface{ Delete(any) error }).Delete(vnode); err != nil {
		t.Fatal(err)
	}
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := f.physicalKube.CoreV1().ConfigMaps(mount).Get(ctx, "settings-abc", metav1.GetOptions{}); err == nil {
		t.Error("the physical copy was not swept")
	}
	if _, err := f.physicalKube.CoreV1().PersistentVolumes().Get(ctx, "pv-abc", metav1.GetOptions{}); err == nil {
		t.Error("the physical PV was not swept")
	}
	if _, err := f.physicalKube.CoreV1().ConfigMaps("other-mount").Get(ctx, "x", metav1.GetOptions{}); err != nil {
		t.Error("another binding's copy was swept")
	}
	cm, err := f.virtualKube.CoreV1().ConfigMaps("team").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cm.Finalizers, []string{"someone.else/keep"}) || len(cm.Labels) != 0 ||
		cm.Annotations[kubeoceanv1alpha1.AnnotationPhysicalName] != "" || cm.Annotations["user"] != "note" {
		t.Errorf("virtual ConfigMap not unmarked cleanly: %+v", cm.ObjectMeta)
	}
	p, err := f.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, "p", metav1.GetOptions{})
	if err != nil || len(p.Finalizers) != 0 {
		t.Errorf("policy finalizers = %v (err %v), want released", p.Finalizers, err)
	}
	if got := f.binding(t).Finalizers; !slices.Equal(got, []string{kubeoceanv1alpha1.FinalizerClusterBindingManager}) {
		t.Fatalf("binding finalizers = %v, want only the manager's", got)
	}
}

// A CSI node-publish Secret is copied under its own namespace and name, out
// of the mount namespace: unbinding finds it through the virtual Secret's
// used-by-pv mark, deletes our copy, and leaves alone a physical Secret of
// the same name that is not ours.
func TestUnbindingDeletesCSISecretCopies(t *testing.T) {
	marked := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: name, Labels: map[string]string{
			kubeoceanv1alpha1.LabelManagedBy:           kubeoceanv1alpha1.ManagedByKubeocean,
			kubeoceanv1alpha1.SyncedByLabel(clusterID): "true",
			kubeoceanv1alpha1.LabelUsedByPV:            "true",
		}, Finalizers: []string{kubeoceanv1alpha1.Finalizer(clusterID)}}}
	}
	ours := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "disk-creds", UID: "copy-uid",
		Labels: owner.Stamp(nil),
		Annotations: map[string]string{
			kubeoceanv1alpha1.AnnotationVirtualNamespace: "storage", kubeoceanv1alpha1.AnnotationVirtualName: "disk-creds",
		}}}
	theirs := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "shared-creds"}}
	f := newFixture(t, newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer),
		[]runtime.Object{marked("disk-creds"), marked("shared-creds")}, []runtime.Object{ours, theirs})
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := f.physicalKube.CoreV1().Secrets("storage").Get(ctx, "disk-creds", metav1.GetOptions{}); err == nil {
		t.Error("our CSI Secret copy was not deleted")
	}
	if _, err := f.physicalKube.CoreV1().Secrets("storage").Get(ctx, "shared-creds", metav1.GetOptions{}); err != nil {
		t.Errorf("a physical Secret that is not our copy was deleted: %v", err)
	}
	for _, name := range []string{"disk-creds", "shared-creds"} {
		secret, err := f.virtualKube.CoreV1().Secrets("storage").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(secret.Labels) != 0 || len(secret.Finalizers) != 0 {
			t.Errorf("virtual Secret %s still marked: %+v", name, secret.ObjectMeta)
		}
	}
}

// Another virtual cluster binds the same physical cluster with the same
// cluster ID and mount namespace. Unbinding ours neither waits for its pods
// nor sweeps its copies, PVs or CSI Secret copies; objects an older version
// made without an identity are not provably ours and stay too.
func TestUnbindingLeavesAnotherBindingsObjects(t *testing.T) {
	theirMapping := map[string]string{kubeoceanv1alpha1.AnnotationVirtualNamespace: "storage", kubeoceanv1alpha1.AnnotationVirtualName: "disk-creds"}
	legacy := map[string]string{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}
	physical := []runtime.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "settings-abc", Labels: otherBinding.Stamp(nil)}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "web-123-token", Labels: otherBinding.Stamp(nil)}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "data-abc", Labels: otherBinding.Stamp(nil)}},
		&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-abc", Labels: otherBinding.Stamp(nil)},
			Spec: corev1.PersistentVolumeSpec{ClaimRef: &corev1.ObjectReference{Namespace: mount, Name: "data-abc"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "disk-creds", Labels: otherBinding.Stamp(nil), Annotations: theirMapping}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "legacy-abc", Labels: legacy}},
	}
	// Our virtual Secret is marked as a CSI Secret, so unbinding looks at
	// the physical Secret of that name: the other binding's copy.
	marked := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "storage", Name: "disk-creds", Labels: map[string]string{
		kubeoceanv1alpha1.LabelManagedBy:           kubeoceanv1alpha1.ManagedByKubeocean,
		kubeoceanv1alpha1.SyncedByLabel(clusterID): "true",
		kubeoceanv1alpha1.LabelUsedByPV:            "true",
	}}}
	f := newFixture(t, newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer), []runtime.Object{marked}, physical)
	theirPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: mount, Name: "web-123", Labels: otherBinding.Stamp(nil)}}
	if err := f.podStore.Add(theirPod); err != nil {
		t.Fatal(err)
	}
	result, err := f.c.sync(t.Context(), bindingName)
	if err != nil || result.RequeueAfter != 0 {
		t.Fatalf("sync = %v, %v; want unbinding to finish without waiting for another binding's pod", result, err)
	}
	for _, action := range f.physicalKube.Actions() {
		if action.GetVerb() == "delete" {
			t.Errorf("unbinding deleted %s %v of another binding", action.GetResource().Resource, action)
		}
	}
	if got := f.binding(t).Finalizers; len(got) != 0 {
		t.Errorf("binding finalizers = %v, want the syncer's released", got)
	}
}

// Unbinding deletes the binding's host port placeholders, wherever they
// are, and no other binding's.
func TestUnbindingDeletesPlaceholders(t *testing.T) {
	placeholder := func(namespace, name string, o ownership.Owner) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID(name),
			Labels: o.Stamp(map[string]string{hostports.LabelPlaceholder: "true"})}}
	}
	f := newFixture(t, newBinding(true, kubeoceanv1alpha1.FinalizerClusterBindingSyncer), []runtime.Object{
		placeholder("kubeocean-system", "ours", owner), placeholder("elsewhere", "ours-too", owner),
		placeholder("kubeocean-system", "theirs", otherBinding),
	}, nil)
	if _, err := f.c.sync(t.Context(), bindingName); err != nil {
		t.Fatal(err)
	}
	pods, err := f.virtualKube.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Name)
	}
	if !slices.Equal(left, []string{"theirs"}) {
		t.Errorf("pods left %v, want only another binding's placeholder", left)
	}
}
