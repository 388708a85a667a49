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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/provision"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestUnbindingKeepsProvisionedVolumes: a StatefulSet runs on volumes the
// binding provisioned in the physical cluster under a class's Delete
// policy; deleting the binding removes their holder claims but leaves the
// physical volumes in place, Retain and Released, naming the virtual
// claims they held, and the binding's VolumesRetained event lists them.
func TestUnbindingKeepsProvisionedVolumes(t *testing.T) {
	const clusterID = "cls-unbind-vol"
	ctx := t.Context()
	w := lendNode(t, "unbind-vol", clusterID)
	physicalClass := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "unbind-vol-local"}, Provisioner: "local.test.example.com"}
	if _, err := w.Physical.StorageV1().StorageClasses().Create(ctx, physicalClass, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = w.Physical.StorageV1().StorageClasses().Delete(ctx, physicalClass.Name, metav1.DeleteOptions{})
		_ = w.Physical.CoreV1().PersistentVolumes().DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: "test-provisioner=" + physicalClass.Name})
	})
	runLocalProvisioner(ctx, t, w.Physical, w.Mount, physicalClass.Name)
	class := provision.VirtualClassName(clusterID, physicalClass.Name)
	testenv.WaitFor(t, 30*time.Second, "the virtual StorageClass "+class, func(ctx context.Context) (bool, error) {
		_, err := w.Virtual.StorageV1().StorageClasses().Get(ctx, class, metav1.GetOptions{})
		return err == nil, err
	})
	ns := "unbind-vol"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	if _, err := w.Virtual.AppsV1().StatefulSets(ns).Create(ctx, statefulSet(ns, class, clusterID), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.Virtual.AppsV1().StatefulSets(ns).Delete(context.Background(), "db", metav1.DeleteOptions{})
	})
	volumes := waitStatefulSetRunning(t, w, ns)
	binding, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Delete(ctx, w.Binding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 120*time.Second, "the binding is gone", func(ctx context.Context) (bool, error) {
		_, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})

	for pod, v := range volumes {
		// The holder goes; its volume stays, Released once the physical
		// cluster has seen its claim go.
		testenv.WaitFor(t, 30*time.Second, "the volume of "+pod+" is kept, Released", func(ctx context.Context) (bool, error) {
			_, errHolder := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, provision.HolderName(v.claimUID), metav1.GetOptions{})
			pv, err := w.Physical.CoreV1().PersistentVolumes().Get(ctx, v.phyPV, metav1.GetOptions{})
			if err != nil {
				return false, fmt.Errorf("physical volume %s: %w", v.phyPV, err)
			}
			return apierrors.IsNotFound(errHolder) && pv.Status.Phase == corev1.VolumeReleased,
				fmt.Errorf("holder: %v; volume %s is %s", errHolder, pv.Name, pv.Status.Phase)
		})
		pv, err := w.Physical.CoreV1().PersistentVolumes().Get(ctx, v.phyPV, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || pv.Spec.HostPath == nil || pv.Spec.HostPath.Path != v.path {
			t.Errorf("%s: kept volume %s has policy %s and source %+v; want Retain on %s", pod, pv.Name, pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.PersistentVolumeSource, v.path)
		}
		if got := pv.Annotations[kubeoceanv1alpha1.AnnotationVirtualNamespace] + "/" + pv.Annotations[kubeoceanv1alpha1.AnnotationVirtualName]; got != ns+"/data-"+pod {
			t.Errorf("%s: kept volume %s names the virtual claim %q", pod, pv.Name, got)
		}
	}
	testenv.WaitFor(t, 30*time.Second, "the binding's "+kubeoceanv1alpha1.EventVolumesRetained+" event lists the kept volumes", func(ctx context.Context) (bool, error) {
		events, err := w.Virtual.CoreV1().Events(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var messages []string
		for _, e := range events.Items {
			if e.InvolvedObject.UID == binding.UID && e.Reason == kubeoceanv1alpha1.EventVolumesRetained {
				messages = append(messages, e.Message)
			}
		}
		all := strings.Join(messages, "\n")
		for _, v := range volumes {
			if !strings.Contains(all, v.phyPV) {
				return false, fmt.Errorf("%s not in %q", v.phyPV, messages)
			}
		}
		return true, nil
	})
	// The virtual claims keep their volumes; nothing deleted them.
	for pod, v := range volumes {
		claim, err := w.Virtual.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-"+pod, metav1.GetOptions{})
		if err != nil || claim.Spec.VolumeName != v.virtualPV {
			t.Errorf("virtual claim of %s: %v (%v)", pod, claim, err)
		}
	}
}
