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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// claimedVolume creates a virtual PV with source, a claim bound to it by
// name, and a pod on the binding's node that mounts the claim as the
// volume "data"; it waits until the virtual controller-manager has bound
// them.
func claimedVolume(t *testing.T, w *testenv.SyncerWorld, ns, name string, source corev1.PersistentVolumeSource) {
	t.Helper()
	ctx := t.Context()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pvName := ns + "-" + name
	if _, err := w.Virtual.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: size, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: "manual",
			PersistentVolumeSource: source,
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	class := "manual"
	if _, err := w.Virtual.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: size}, StorageClassName: &class, VolumeName: pvName,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "claim "+ns+"/"+name+" Bound", func(ctx context.Context) (bool, error) {
		claim, err := w.Virtual.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return claim.Status.Phase == corev1.ClaimBound, fmt.Errorf("phase %s", claim.Status.Phase)
	})
	p := workload(ns, name, w.ClusterID, func(p *corev1.Pod) {
		p.Spec.NodeName = w.VirtualNode(w.Binding + "-node")
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nothingPhysicalFor checks that no physical pod, claim copy or volume
// copy exists for the pod ns/name of claimedVolume.
func nothingPhysicalFor(t *testing.T, w *testenv.SyncerWorld, ns, name string) {
	t.Helper()
	ctx := t.Context()
	_, errPod := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, name), metav1.GetOptions{})
	_, errPVC := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, name), metav1.GetOptions{})
	_, errPV := w.Physical.CoreV1().PersistentVolumes().Get(ctx, dependents.PhysicalPVName(ns+"-"+name), metav1.GetOptions{})
	for what, err := range map[string]error{"pod": errPod, "claim": errPVC, "volume": errPV} {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s/%s: physical %s: %v, want none", ns, name, what, err)
		}
	}
}

// TestPersistentVolumeSourcesNeedTheLendersAllowance: a virtual PV is the
// virtual cluster user's word, mounted by a physical kubelet. A hostPath
// of / reaches nothing physical: the pod says why, naming its volume, its
// claim and the source. With the lender's policy allowing the CSI driver
// csi.example.com, a volume of that driver is copied (its handle with it)
// and the pod runs, while one of another driver is not. Allowing hostPath
// too brings the refused pod back, to meet the mount namespace's baseline
// level, which judges the claim as the hostPath volume it is.
func TestPersistentVolumeSourcesNeedTheLendersAllowance(t *testing.T) {
	w := lendNode(t, "pvsrc", "cls-pvsrc")
	ns := "pvsrc"
	testenv.CreateNamespace(t, w.Virtual, ns)

	claimedVolume(t, w, ns, "root", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}})
	_, c := waitCreatedCondition(t, w, ns, "root", corev1.ConditionFalse, kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed)
	for _, want := range []string{`volume "data"`, ns + "/root", "hostPath"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("condition message %q does not name %s", c.Message, want)
		}
	}

	w.UpdatePolicy(t, w.Binding, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.Allowances = &kubeoceanv1alpha1.WorkloadAllowances{CSIDrivers: []string{"csi.example.com"}}
	})
	claimedVolume(t, w, ns, "allowed", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver: "csi.example.com", VolumeHandle: "vol-allowed"}})
	claimedVolume(t, w, ns, "other", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver: "other.example.com", VolumeHandle: "team-b-disk"}})
	testenv.WaitFor(t, 60*time.Second, "the pod of the allowed driver's volume exists in the physical cluster", func(ctx context.Context) (bool, error) {
		return physicalPodExists(t, w, ns, "allowed"), nil
	})
	copied, err := w.Physical.CoreV1().PersistentVolumes().Get(t.Context(), dependents.PhysicalPVName(ns+"-allowed"), metav1.GetOptions{})
	if err != nil || copied.Spec.CSI == nil || copied.Spec.CSI.VolumeHandle != "vol-allowed" {
		t.Fatalf("copy of the allowed driver's volume: %v (%v)", copied, err)
	}
	_, c = waitCreatedCondition(t, w, ns, "other", corev1.ConditionFalse, kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed)
	if !strings.Contains(c.Message, "other.example.com") {
		t.Errorf("condition message %q does not name the driver", c.Message)
	}

	// Resyncs and the other pods' syncs come and go: nothing of the
	// refused pods is sent, and each said so once.
	time.Sleep(5 * time.Second)
	for _, name := range []string{"root", "other"} {
		nothingPhysicalFor(t, w, ns, name)
		if n := eventsFor(t, w, ns, name, kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed); n != 1 {
			t.Errorf("%s: %d %s events, want 1", name, n, kubeoceanv1alpha1.ReasonVolumeSourceNotAllowed)
		}
	}

	w.UpdatePolicy(t, w.Binding, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.Allowances.VolumeSources = []string{"hostPath"}
	})
	_, c = waitCreatedCondition(t, w, ns, "root", corev1.ConditionFalse, kubeoceanv1alpha1.ReasonPodSecurityViolation)
	if !strings.Contains(c.Message, "hostPath volumes") || !strings.Contains(c.Message, `"data"`) {
		t.Errorf("condition message %q does not name the hostPath volume data", c.Message)
	}
	nothingPhysicalFor(t, w, ns, "root")
}
