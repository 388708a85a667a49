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

package topdown

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/provision"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// runLocalProvisioner is the physical cluster's provisioner, binder and
// resizer for claims of class in namespace (the physical cluster runs no
// kube-controller-manager): a hostPath volume on the claim's selected node
// for each claim, bound to it; a bound claim that asks for more than it has
// gets it, the volume first and then the claim, as external-resizer does; a
// volume whose claim is gone follows its reclaim policy (see reclaim).
func runLocalProvisioner(ctx context.Context, t *testing.T, kube kubernetes.Interface, namespace, class string) {
	step := func() error {
		claims, err := kube.CoreV1().PersistentVolumeClaims(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		live := map[types.UID]bool{}
		for i := range claims.Items {
			claim := &claims.Items[i]
			if ptr.Deref(claim.Spec.StorageClassName, "") != class {
				continue
			}
			if claim.DeletionTimestamp != nil {
				// As the physical pvc-protection controller would once no pod
				// uses the claim.
				if err := dropFinalizers(ctx, kube, claim); err != nil {
					return err
				}
				continue
			}
			live[claim.UID] = true
			if claim.Status.Phase == corev1.ClaimBound {
				if err := resizeLocal(ctx, kube, claim); err != nil {
					return err
				}
				continue
			}
			if err := bindLocalVolume(ctx, kube, claim, class); err != nil {
				return err
			}
		}
		volumes, err := kube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{LabelSelector: "test-provisioner=" + class})
		if err != nil {
			return err
		}
		for _, pv := range volumes.Items {
			if pv.DeletionTimestamp != nil && len(pv.Finalizers) > 0 {
				pv.Finalizers = nil
				if _, err := kube.CoreV1().PersistentVolumes().Update(ctx, &pv, metav1.UpdateOptions{}); err != nil {
					return err
				}
				continue
			}
			if ref := pv.Spec.ClaimRef; ref != nil && !live[ref.UID] {
				if err := reclaim(ctx, kube, &pv); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
		}
		return nil
	}
	go func() {
		for ctx.Err() == nil {
			if err := step(); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) {
				t.Logf("test provisioner: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
}

// reclaim does to a volume whose claim is gone what the PV controller does
// by its reclaim policy: Delete deletes it, Retain marks it Released and
// keeps it.
func reclaim(ctx context.Context, kube kubernetes.Interface, pv *corev1.PersistentVolume) error {
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case corev1.PersistentVolumeReclaimDelete:
		return kube.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	case corev1.PersistentVolumeReclaimRetain:
		if pv.Status.Phase != corev1.VolumeReleased {
			pv.Status.Phase = corev1.VolumeReleased
			_, err := kube.CoreV1().PersistentVolumes().UpdateStatus(ctx, pv, metav1.UpdateOptions{})
			return err
		}
	}
	return nil
}

// bindLocalVolume makes a hostPath volume on the claim's selected node and
// binds the two, as a provisioner and the binder would.
func bindLocalVolume(ctx context.Context, kube kubernetes.Interface, claim *corev1.PersistentVolumeClaim, class string) error {
	node := claim.Annotations["volume.kubernetes.io/selected-node"]
	if claim.Status.Phase == corev1.ClaimBound || node == "" {
		return nil
	}
	pvName := "local-" + string(claim.UID)
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName, Labels: map[string]string{"test-provisioner": class}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claim.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   claim.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + pvName}},
			ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
			}}}},
		},
	}
	created, err := kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = kube.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	if created.Status.Phase != corev1.VolumeBound {
		created.Status.Phase = corev1.VolumeBound
		if _, err := kube.CoreV1().PersistentVolumes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if claim.Spec.VolumeName == "" {
		claim.Spec.VolumeName = pvName
		if claim, err = kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	claim.Status.Phase = corev1.ClaimBound
	claim.Status.AccessModes = claim.Spec.AccessModes
	claim.Status.Capacity = pv.Spec.Capacity
	_, err = kube.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	return err
}

// resizeLocal grows the volume of a bound claim that asks for more than it
// has, then the claim's capacity.
func resizeLocal(ctx context.Context, kube kubernetes.Interface, claim *corev1.PersistentVolumeClaim) error {
	want, have := claim.Spec.Resources.Requests[corev1.ResourceStorage], claim.Status.Capacity[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return nil
	}
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if size := pv.Spec.Capacity[corev1.ResourceStorage]; size.Cmp(want) < 0 {
		pv.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
		if _, err := kube.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	claim = claim.DeepCopy()
	claim.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
	_, err = kube.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{})
	return err
}

func dropFinalizers(ctx context.Context, kube kubernetes.Interface, claim *corev1.PersistentVolumeClaim) error {
	if len(claim.Finalizers) == 0 {
		return nil
	}
	claim = claim.DeepCopy()
	claim.Finalizers = nil
	_, err := kube.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
	return err
}

// volumesOf follows the claim of a StatefulSet pod to the physical volume
// that holds its data: virtual claim → provisioned virtual PV → holder
// claim → physical PV, and checks that the physical pod mounts that volume
// through the holder itself: no copy of the claim, and exactly one
// physical PV for the volume.
type claimVolumes struct {
	claimUID         types.UID
	virtualPV, phyPV string
	path             string
}

func volumesOf(ctx context.Context, w *testenv.SyncerWorld, ns, pod, claim string) (claimVolumes, error) {
	var v claimVolumes
	pvc, err := w.Virtual.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return v, err
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return v, fmt.Errorf("claim %s is %s", claim, pvc.Status.Phase)
	}
	v.claimUID, v.virtualPV = pvc.UID, pvc.Spec.VolumeName
	pv, err := w.Virtual.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return v, err
	}
	holder, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, pv.Annotations[kubeoceanv1alpha1.AnnotationHolderClaim], metav1.GetOptions{})
	if err != nil {
		return v, fmt.Errorf("holder: %w", err)
	}
	physical, err := w.Physical.CoreV1().PersistentVolumes().Get(ctx, holder.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return v, fmt.Errorf("physical volume: %w", err)
	}
	v.phyPV, v.path = physical.Name, physical.Spec.HostPath.Path
	// What the running pod mounts: the holder.
	physicalPod, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, pod), metav1.GetOptions{})
	if err != nil {
		return v, fmt.Errorf("physical pod: %w", err)
	}
	var mounted []string
	for _, volume := range physicalPod.Spec.Volumes {
		if volume.PersistentVolumeClaim != nil {
			mounted = append(mounted, volume.PersistentVolumeClaim.ClaimName)
		}
	}
	if len(mounted) != 1 || mounted[0] != holder.Name {
		return v, fmt.Errorf("the physical pod mounts claims %v, want the holder %s", mounted, holder.Name)
	}
	if _, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, claim), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return v, fmt.Errorf("a copy of claim %s exists in the physical cluster (%v)", claim, err)
	}
	all, err := w.Physical.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return v, err
	}
	var same []string
	for _, other := range all.Items {
		if other.Spec.HostPath != nil && other.Spec.HostPath.Path == v.path {
			same = append(same, other.Name)
		}
	}
	if len(same) != 1 {
		return v, fmt.Errorf("physical PVs %v point at the volume %s, want exactly one", same, v.path)
	}
	return v, nil
}

func statefulSet(ns, class, clusterID string) *appsv1.StatefulSet {
	labels := map[string]string{"app": "db"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{kubeoceanv1alpha1.LabelClusterID: clusterID},
					Tolerations:  []corev1.Toleration{{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists}},
					Containers: []corev1.Container{{Name: "db", Image: "registry.k8s.io/pause:3.10",
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: &class,
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

func waitStatefulSetRunning(t *testing.T, w *testenv.SyncerWorld, ns string) map[string]claimVolumes {
	t.Helper()
	out := map[string]claimVolumes{}
	testenv.WaitFor(t, 120*time.Second, "the StatefulSet's 3 pods run on their provisioned volumes", func(ctx context.Context) (bool, error) {
		for i := range 3 {
			name := fmt.Sprintf("db-%d", i)
			p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return false, fmt.Errorf("%s is %s on %q", name, p.Status.Phase, p.Spec.NodeName)
			}
			v, err := volumesOf(ctx, w, ns, name, "data-"+name)
			if err != nil {
				return false, err
			}
			out[name] = v
		}
		return true, nil
	})
	return out
}

// TestStatefulSetGetsStorageFromThePhysicalCluster: a physical StorageClass
// shows in the virtual cluster as <clusterID>-<name>; a StatefulSet of 3
// with volumeClaimTemplates of that class runs on a virtual node, each
// claim provisioned in the physical cluster on the node behind it, and its
// pods mount that storage; deleted and created again, the StatefulSet gets
// the same volumes back. A claim deleted then reclaims its volume by the
// Delete policy, in both clusters.
func TestStatefulSetGetsStorageFromThePhysicalCluster(t *testing.T) {
	ctx := t.Context()
	w := lendNode(t, "sts", "cls-sts")
	physicalClass := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: "sts-local"},
		Provisioner:          "local.test.example.com",
		AllowVolumeExpansion: ptr.To(true),
	}
	if _, err := w.Physical.StorageV1().StorageClasses().Create(ctx, physicalClass, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Physical.StorageV1().StorageClasses().Delete(context.Background(), physicalClass.Name, metav1.DeleteOptions{})
	})
	runLocalProvisioner(ctx, t, w.Physical, w.Mount, physicalClass.Name)
	class := provision.VirtualClassName("cls-sts", physicalClass.Name)
	testenv.WaitFor(t, 30*time.Second, "the virtual StorageClass "+class, func(ctx context.Context) (bool, error) {
		c, err := w.Virtual.StorageV1().StorageClasses().Get(ctx, class, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return c.Provisioner == provision.ProvisionerName("cls-sts") &&
			ptr.Deref(c.VolumeBindingMode, "") == storagev1.VolumeBindingWaitForFirstConsumer, fmt.Errorf("%+v", c)
	})

	ns := "sts"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	if _, err := w.Virtual.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, class, "cls-sts"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := waitStatefulSetRunning(t, w, ns)
	t.Logf("volumes: %+v", first)

	// A larger request of a running pod's claim goes to its holder, and
	// the grown volume comes back to the virtual PV and the claim.
	resizeClaim(t, w, ns, "data-db-0", first["db-0"], resource.MustParse("2Gi"))
	// One the physical cluster refuses (a quota of the mount namespace)
	// shows on the claim, once.
	refusedResize(t, w, ns, "data-db-1", first["db-1"])

	// Deleted, pods gone in both clusters; the claims stay.
	if err := w.Virtual.AppsV1().StatefulSets(ns).Delete(ctx, "db", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 120*time.Second, "the StatefulSet's pods are gone in both clusters", func(ctx context.Context) (bool, error) {
		virtual, err := w.Virtual.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=db"})
		if err != nil {
			return false, err
		}
		physical, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, metav1.ListOptions{LabelSelector: tenantmeta.LabelKey("app") + "=db"})
		if err != nil {
			return false, err
		}
		_, err = w.Virtual.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		return len(virtual.Items)+len(physical.Items) == 0 && apierrors.IsNotFound(err),
			fmt.Errorf("%d virtual, %d physical pods; StatefulSet: %v", len(virtual.Items), len(physical.Items), err)
	})
	if _, err := w.Virtual.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, class, "cls-sts"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := waitStatefulSetRunning(t, w, ns)
	for name, v := range first {
		if second[name] != v {
			t.Errorf("%s: volumes %+v after recreation, want %+v", name, second[name], v)
		}
	}

	// Reclaimed by the Delete policy once the StatefulSet and a claim go.
	if err := w.Virtual.AppsV1().StatefulSets(ns).Delete(ctx, "db", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Virtual.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, "data-db-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := first["db-0"]
	testenv.WaitFor(t, 120*time.Second, "the volume of data-db-0 is reclaimed in both clusters", func(ctx context.Context) (bool, error) {
		_, errV := w.Virtual.CoreV1().PersistentVolumes().Get(ctx, gone.virtualPV, metav1.GetOptions{})
		_, errH := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, provision.HolderName(gone.claimUID), metav1.GetOptions{})
		_, errP := w.Physical.CoreV1().PersistentVolumes().Get(ctx, gone.phyPV, metav1.GetOptions{})
		return apierrors.IsNotFound(errV) && apierrors.IsNotFound(errH) && apierrors.IsNotFound(errP),
			fmt.Errorf("virtual PV: %v; holder: %v; physical PV: %v", errV, errH, errP)
	})
	if _, err := volumesOfHolderOnly(ctx, w, ns, "data-db-1"); err != nil {
		t.Errorf("data-db-1 lost its volume: %v", err)
	}
}

// volumesOfHolderOnly checks a claim still has its provisioned volume, with
// no pod running.
func volumesOfHolderOnly(ctx context.Context, w *testenv.SyncerWorld, ns, claim string) (string, error) {
	pvc, err := w.Virtual.CoreV1().PersistentVolumeClaims(ns).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	holder, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, provision.HolderName(pvc.UID), metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return holder.Spec.VolumeName, nil
}
