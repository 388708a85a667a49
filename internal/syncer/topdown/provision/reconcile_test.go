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
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

const (
	clusterID = "cls"
	mount     = "mount"
)

type fixture struct {
	c                 *Controller
	virtual, physical *kubefake.Clientset
	stores            map[string]cache.Indexer
	recorder          *record.FakeRecorder
	clock             *clocktesting.FakePassiveClock
}

func newFixture(t *testing.T, physicalObjs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{virtual: kubefake.NewClientset(), physical: kubefake.NewClientset(physicalObjs...),
		recorder: record.NewFakeRecorder(10), clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))}
	v := kubeinformers.NewSharedInformerFactory(f.virtual, 0)
	p := kubeinformers.NewSharedInformerFactory(f.physical, 0)
	opts := Options{
		ClusterID: clusterID, BindingUID: "uid-1", MountNamespace: mount,
		VirtualClient: f.virtual, PhysicalClient: f.physical,
		PhysicalClasses: p.Storage().V1().StorageClasses(), VirtualClasses: v.Storage().V1().StorageClasses(),
		VirtualVolumes: v.Core().V1().PersistentVolumes(), VirtualClaims: v.Core().V1().PersistentVolumeClaims(),
		VirtualNodes: v.Core().V1().Nodes(), Holders: p.Core().V1().PersistentVolumeClaims(),
		Recorder: f.recorder, Clock: f.clock,
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.stores = map[string]cache.Indexer{
		"physicalClasses": opts.PhysicalClasses.Informer().GetIndexer(),
		"virtualClasses":  opts.VirtualClasses.Informer().GetIndexer(),
		"virtualVolumes":  opts.VirtualVolumes.Informer().GetIndexer(),
		"virtualClaims":   opts.VirtualClaims.Informer().GetIndexer(),
		"virtualNodes":    opts.VirtualNodes.Informer().GetIndexer(),
		"holders":         opts.Holders.Informer().GetIndexer(),
	}
	return f
}

func (f *fixture) add(t *testing.T, store string, obj any) {
	t.Helper()
	if err := f.stores[store].Add(obj); err != nil {
		t.Fatal(err)
	}
}

func actions(client *kubefake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		what := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			what += "/" + a.GetSubresource()
		}
		switch a := a.(type) {
		case clienttesting.CreateAction: // and updates
			what += " " + a.GetObject().(metav1.Object).GetName()
		case clienttesting.DeleteAction:
			what += " " + a.GetName()
		case clienttesting.GetAction:
			what += " " + a.GetName()
		}
		out = append(out, what)
	}
	client.ClearActions()
	return out
}

func TestClassFollowsThePhysicalOne(t *testing.T) {
	f := newFixture(t)
	physical := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "ssd"}, Provisioner: "disk.example.com",
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain)}
	f.add(t, "physicalClasses", physical)
	if err := f.c.syncClass(t.Context(), "ssd"); err != nil {
		t.Fatal(err)
	}
	created, err := f.virtual.StorageV1().StorageClasses().Get(t.Context(), "cls-ssd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Provisioner != ProvisionerName(clusterID) || *created.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer ||
		*created.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || created.Parameters[kubeoceanv1alpha1.ParameterPhysicalStorageClass] != "ssd" {
		t.Errorf("virtual class %+v", created)
	}
	f.add(t, "virtualClasses", created)
	actions(f.virtual)
	if err := f.c.syncClass(t.Context(), "ssd"); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.virtual); len(got) != 0 {
		t.Errorf("again: %v", got)
	}
	if err := f.stores["physicalClasses"].Delete(physical); err != nil {
		t.Fatal(err)
	}
	if err := f.c.syncClass(t.Context(), "ssd"); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.virtual); !slices.Equal(got, []string{"delete storageclasses cls-ssd"}) {
		t.Errorf("physical class gone: %v", got)
	}
}

func TestClaimIsProvisionedOnTheSelectedNode(t *testing.T) {
	f := newFixture(t)
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "cls-ssd"}, Provisioner: ProvisionerName(clusterID),
		Parameters: map[string]string{kubeoceanv1alpha1.ParameterPhysicalStorageClass: "ssd"}, ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)}
	f.add(t, "virtualClasses", class)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: kubeoceanv1alpha1.VirtualNodeName(clusterID, "worker"),
		Labels: map[string]string{kubeoceanv1alpha1.LabelClusterID: clusterID}, Annotations: map[string]string{}}}
	kubeoceanv1alpha1.SetPhysicalNodeName(node.Labels, node.Annotations, "worker")
	f.add(t, "virtualNodes", node)
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", UID: "claim-uid"},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("cls-ssd"),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	f.add(t, "virtualClaims", claim)

	// No consumer yet: nothing.
	if _, err := f.c.syncClaim(t.Context(), "app", "data"); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.physical); len(got) != 0 {
		t.Fatalf("before a node is selected: %v", got)
	}

	selected := claim.DeepCopy()
	selected.Annotations = map[string]string{annotationSelectedNode: node.Name}
	_ = f.stores["virtualClaims"].Update(selected)
	if _, err := f.c.syncClaim(t.Context(), "app", "data"); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.physical); !slices.Equal(got, []string{"create persistentvolumeclaims pvc-claim-uid"}) {
		t.Fatalf("node selected: %v", got)
	}
	holder, err := f.physical.CoreV1().PersistentVolumeClaims(mount).Get(t.Context(), "pvc-claim-uid", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *holder.Spec.StorageClassName != "ssd" || holder.Annotations[annotationSelectedNode] != "worker" ||
		holder.Labels[kubeoceanv1alpha1.LabelBindingUID] != "uid-1" || holder.Labels[kubeoceanv1alpha1.LabelVolumeHolder] != "true" {
		t.Errorf("holder %+v", holder)
	}

	// Bound in the physical cluster: the virtual PV mirrors the volume.
	physicalPV := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "local-1"}, Spec: corev1.PersistentVolumeSpec{
		Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/1"}},
		NodeAffinity:           &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}},
	}}
	if _, err := f.physical.CoreV1().PersistentVolumes().Create(t.Context(), physicalPV, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holder.Spec.VolumeName, holder.Status.Phase = "local-1", corev1.ClaimBound
	f.add(t, "holders", holder)
	actions(f.physical)
	if _, err := f.c.syncClaim(t.Context(), "app", "data"); err != nil {
		t.Fatal(err)
	}
	pv, err := f.virtual.CoreV1().PersistentVolumes().Get(t.Context(), "pvc-claim-uid", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.HostPath.Path != "/data/1" || pv.Spec.ClaimRef.UID != "claim-uid" || pv.Spec.StorageClassName != "cls-ssd" ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.Annotations[kubeoceanv1alpha1.AnnotationHolderClaim] != "pvc-claim-uid" {
		t.Errorf("virtual PV %+v", pv)
	}
	if terms := pv.Spec.NodeAffinity.Required.NodeSelectorTerms; len(terms) != 1 || terms[0].MatchExpressions[1].Values[0] != "worker" {
		t.Errorf("node affinity %+v", pv.Spec.NodeAffinity)
	}

	// Released with Delete: the holder goes, then the virtual PV.
	pv.Status.Phase = corev1.VolumeReleased
	f.add(t, "virtualVolumes", pv)
	actions(f.virtual)
	actions(f.physical)
	if err := f.c.syncVolume(t.Context(), pv.Name); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.physical); !slices.Equal(got, []string{"delete persistentvolumeclaims pvc-claim-uid"}) {
		t.Fatalf("released: %v", got)
	}
	if got := actions(f.virtual); len(got) != 0 {
		t.Fatalf("released, holder still there: virtual %v", got)
	}
	_ = f.stores["holders"].Delete(holder)
	if err := f.c.syncVolume(t.Context(), pv.Name); err != nil {
		t.Fatal(err)
	}
	if got := actions(f.virtual); !slices.Equal(got, []string{"delete persistentvolumes pvc-claim-uid"}) {
		t.Fatalf("holder gone: %v", got)
	}
}

// TestMirrorIsTiedToTheBindingsNodes: a provisioned volume lives in the
// binding's physical cluster, so only its virtual nodes reach it; one tied
// to a physical node, only that node's virtual node.
func TestMirrorIsTiedToTheBindingsNodes(t *testing.T) {
	f := newFixture(t)
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "data", UID: "claim-uid"}}
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "cls-nfs"}}
	holder := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pvc-claim-uid"}}
	for name, tc := range map[string]struct {
		affinity *corev1.VolumeNodeAffinity
		want     []string
	}{
		"network volume":    {want: []string{kubeoceanv1alpha1.LabelClusterID + " In [cls]"}},
		"node-local volume": {affinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{}}, want: []string{kubeoceanv1alpha1.LabelClusterID + " In [cls]", kubeoceanv1alpha1.LabelPhysicalNodeName + " In [worker]"}},
	} {
		t.Run(name, func(t *testing.T) {
			physical := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "vol"}, Spec: corev1.PersistentVolumeSpec{NodeAffinity: tc.affinity}}
			pv := f.c.mirror(claim, class, holder, physical, "worker")
			var got []string
			for _, term := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
				for _, r := range term.MatchExpressions {
					got = append(got, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("node affinity %v, want %v", got, tc.want)
			}
		})
	}
}
