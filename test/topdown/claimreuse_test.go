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
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/dependents"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// runPhysicalVolumeControllers runs, until the test ends, the physical
// cluster's PersistentVolume binder and the claim and volume protection
// controllers, which the package's physical cluster otherwise lacks: the
// binder is what must bind a claim copy to its volume copy, and the
// protection controllers let a released claim copy go. Only these run, so
// the other tests' world is not changed for them.
func runPhysicalVolumeControllers(t *testing.T) {
	t.Helper()
	dir := os.Getenv(controlplane.EnvTestBin)
	if dir == "" {
		t.Skipf("%s is not set: the physical PV binder cannot be run", controlplane.EnvTestBin)
	}
	log, err := os.Create(filepath.Join(t.TempDir(), "kube-controller-manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "kube-controller-manager"),
		"--kubeconfig="+physicalCluster.KubeconfigPath, "--leader-elect=false", "--secure-port=0",
		"--use-service-account-credentials=false", "--pvclaimbinder-sync-period=5s",
		"--controllers=persistentvolume-binder-controller,persistentvolumeclaim-protection-controller,persistentvolume-protection-controller")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			if data, err := os.ReadFile(log.Name()); err == nil && len(data) > 0 {
				t.Logf("physical kube-controller-manager log (tail):\n%s", data[max(0, len(data)-4000):])
			}
		}
		_ = log.Close()
	})
}

// TestClaimUsedAgainBinds: a pod with a static volume leaves; 40 s later,
// when the claim's copy is gone (30 s grace) but the volume's copy is still
// there (it would go another 30 s later), Released and naming the released
// claim copy's UID, a new pod uses the claim. The volume's copy is
// pre-bound to the claim's copy by name again, and the physical binder
// binds the new claim copy to it: the very same copy, never deleted, still
// Retain.
func TestClaimUsedAgainBinds(t *testing.T) {
	runPhysicalVolumeControllers(t)
	w := lendNode(t, "reuse", "cls-reuse")
	ns := "reuse"
	testenv.CreateNamespace(t, w.Virtual, ns)
	w.UpdatePolicy(t, w.Binding, func(p *kubeoceanv1alpha1.ResourceLeasingPolicy) {
		p.Spec.Allowances = &kubeoceanv1alpha1.WorkloadAllowances{CSIDrivers: []string{"csi.example.com"}}
	})
	claimedVolume(t, w, ns, "data", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
		Driver: "csi.example.com", VolumeHandle: "vol-reuse"}})
	volumeCopy, claimCopy := dependents.PhysicalPVName(ns+"-data"), kubeoceanv1alpha1.PhysicalName(ns, "data")

	first := waitCopiesBound(t, w, volumeCopy, claimCopy, "")
	volume, err := w.Physical.CoreV1().PersistentVolumes().Get(t.Context(), volumeCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volumeUID := volume.UID

	if err := w.Virtual.CoreV1().Pods(ns).Delete(t.Context(), "data", *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	testenv.WaitFor(t, 60*time.Second, "the claim's copy released", func(ctx context.Context) (bool, error) {
		_, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, claimCopy, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	time.Sleep(time.Until(left.Add(40 * time.Second)))
	// What the binder leaves once the claim copy went: the state that
	// never bound before.
	stale, err := w.Physical.CoreV1().PersistentVolumes().Get(t.Context(), volumeCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("volume copy 40 s after its pod left: %v", err)
	}
	// The syncer may have dropped the gone claim's UID already (Available,
	// no UID); without it the copy stays Released naming that UID, and the
	// claim used again below never binds.
	releasedByBinder := stale.Status.Phase == corev1.VolumeReleased && stale.Spec.ClaimRef != nil && string(stale.Spec.ClaimRef.UID) == first
	releasedBySyncer := stale.Spec.ClaimRef != nil && stale.Spec.ClaimRef.UID == ""
	if !releasedByBinder && !releasedBySyncer {
		t.Fatalf("volume copy 40 s after its pod left: phase %s, claimRef %+v; want Released naming %s, or no claim UID", stale.Status.Phase, stale.Spec.ClaimRef, first)
	}

	again := workload(ns, "data-again", w.ClusterID, func(p *corev1.Pod) {
		p.Spec.NodeName = w.VirtualNode(w.Binding + "-node")
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(t.Context(), again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	second := waitCopiesBound(t, w, volumeCopy, claimCopy, first)
	volume, err = w.Physical.CoreV1().PersistentVolumes().Get(t.Context(), volumeCopy, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if volume.UID != volumeUID || volume.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain {
		t.Errorf("volume copy UID %s (was %s), reclaim policy %s: want the same copy, Retain", volume.UID, volumeUID, volume.Spec.PersistentVolumeReclaimPolicy)
	}
	t.Logf("claim copy %s bound to volume copy %s after reuse; released claim %s, new claim %s", claimCopy, volumeCopy, first, second)
}

// waitCopiesBound waits until the physical binder has bound the claim copy
// to the volume copy, both ways, with a claim copy other than the one of
// UID not; it returns the claim copy's UID.
func waitCopiesBound(t *testing.T, w *testenv.SyncerWorld, volumeCopy, claimCopy string, not string) string {
	t.Helper()
	var uid string
	testenv.WaitFor(t, 90*time.Second, "claim copy "+claimCopy+" bound to volume copy "+volumeCopy, func(ctx context.Context) (bool, error) {
		claim, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, claimCopy, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		volume, err := w.Physical.CoreV1().PersistentVolumes().Get(ctx, volumeCopy, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		uid = string(claim.UID)
		ref := volume.Spec.ClaimRef
		bound := uid != not && claim.Status.Phase == corev1.ClaimBound && claim.Spec.VolumeName == volumeCopy &&
			volume.Status.Phase == corev1.VolumeBound && ref != nil && string(ref.UID) == uid
		return bound, fmt.Errorf("claim %s phase %s; volume phase %s, claimRef %+v", uid, claim.Status.Phase, volume.Status.Phase, ref)
	})
	return uid
}
