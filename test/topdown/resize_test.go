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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer/topdown/provision"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// resizeClaim raises the virtual claim's request to size and waits for the
// holder to ask for it, then for the virtual PV and the claim to show it.
func resizeClaim(t *testing.T, w *testenv.SyncerWorld, ns, claim string, v claimVolumes, size resource.Quantity) {
	t.Helper()
	claims := w.Virtual.CoreV1().PersistentVolumeClaims(ns)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pvc, err := claims.Get(t.Context(), claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = size
		_, err = claims.Update(t.Context(), pvc, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "the holder of "+claim+" asks for "+size.String(), func(ctx context.Context) (bool, error) {
		holder, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, provision.HolderName(v.claimUID), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		asked := holder.Spec.Resources.Requests[corev1.ResourceStorage]
		return asked.Cmp(size) == 0, fmt.Errorf("it asks for %s", asked.String())
	})
	testenv.WaitFor(t, 60*time.Second, "the virtual PV and claim "+claim+" have "+size.String(), func(ctx context.Context) (bool, error) {
		pv, err := w.Virtual.CoreV1().PersistentVolumes().Get(ctx, v.virtualPV, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pvc, err := claims.Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		volume, capacity := pv.Spec.Capacity[corev1.ResourceStorage], pvc.Status.Capacity[corev1.ResourceStorage]
		return volume.Cmp(size) == 0 && capacity.Cmp(size) == 0 && len(pvc.Status.AllocatedResourceStatuses) == 0 && len(pvc.Status.Conditions) == 0,
			fmt.Errorf("PV %s, claim %s, %v, conditions %+v", volume.String(), capacity.String(), pvc.Status.AllocatedResourceStatuses, pvc.Status.Conditions)
	})
}

// refusedResize puts a storage quota on the mount namespace that its
// holders fill, raises the claim's request, and waits for the refusal to
// show on the claim: condition ControllerResizeError, the size
// ControllerResizeInfeasible, one VolumeResizeFailed event; then checks
// that nothing is written again.
func refusedResize(t *testing.T, w *testenv.SyncerWorld, ns, claim string, v claimVolumes) {
	t.Helper()
	ctx := t.Context()
	quotas := w.Physical.CoreV1().ResourceQuotas(w.Mount)
	holders, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	used := resource.MustParse("0")
	for _, h := range holders.Items {
		used.Add(h.Spec.Resources.Requests[corev1.ResourceStorage])
	}
	limits := corev1.ResourceList{corev1.ResourceRequestsStorage: used}
	quota, err := quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "storage"}, Spec: corev1.ResourceQuotaSpec{Hard: limits}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := quotas.Delete(context.Background(), quota.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}()
	// The physical cluster runs no quota controller: the usage is ours.
	quota.Status = corev1.ResourceQuotaStatus{Hard: limits, Used: limits}
	if _, err := quotas.UpdateStatus(ctx, quota, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	claims := w.Virtual.CoreV1().PersistentVolumeClaims(ns)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pvc, err := claims.Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Gi")
		_, err = claims.Update(ctx, pvc, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var refused *corev1.PersistentVolumeClaim
	testenv.WaitFor(t, 60*time.Second, "the refusal shows on "+claim, func(ctx context.Context) (bool, error) {
		pvc, err := claims.Get(ctx, claim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		refused = pvc
		for _, c := range pvc.Status.Conditions {
			if c.Type == corev1.PersistentVolumeClaimControllerResizeError && c.Status == corev1.ConditionTrue && strings.Contains(c.Message, "exceeded quota") &&
				pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] == corev1.PersistentVolumeClaimControllerResizeInfeasible {
				return true, nil
			}
		}
		return false, fmt.Errorf("status %+v", pvc.Status)
	})
	holder, err := w.Physical.CoreV1().PersistentVolumeClaims(w.Mount).Get(ctx, provision.HolderName(v.claimUID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if asked := holder.Spec.Resources.Requests[corev1.ResourceStorage]; asked.String() != "1Gi" {
		t.Errorf("the refused holder asks for %s", asked.String())
	}
	// No loop: a while later the claim is as it was and the event was
	// recorded once.
	time.Sleep(3 * time.Second)
	again, err := claims.Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != refused.ResourceVersion {
		t.Errorf("the refused claim was written again: %+v", again.Status)
	}
	events, err := w.Virtual.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + claim + ",reason=" + kubeoceanv1alpha1.ReasonVolumeResizeFailed})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) != 1 || events.Items[0].Count > 1 {
		t.Errorf("refusal events: %+v", events.Items)
	}
}
