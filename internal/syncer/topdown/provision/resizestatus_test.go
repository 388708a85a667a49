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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

func TestResizedStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	claimOf := func(request, capacity string, mutate func(*corev1.PersistentVolumeClaimStatus)) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{
			Spec:   corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: storage(request)}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: storage(capacity)},
		}
		if mutate != nil {
			mutate(&c.Status)
		}
		return c
	}
	holderOf := func(capacity string, mutate func(*corev1.PersistentVolumeClaimStatus)) *corev1.PersistentVolumeClaim {
		return claimOf("0", capacity, mutate)
	}
	resizing := func(s *corev1.PersistentVolumeClaimStatus) {
		s.AllocatedResources = storage("2Gi")
		s.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInProgress}
		s.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimResizing, Status: corev1.ConditionTrue,
			Reason: kubeoceanv1alpha1.ReasonResizing, Message: "Waiting for the physical cluster to resize the volume", LastTransitionTime: earlier}}
	}
	for name, tc := range map[string]struct {
		claim, holder *corev1.PersistentVolumeClaim
		refused       *refusal
		want          *corev1.PersistentVolumeClaim
	}{
		"nothing asked": {
			claim: claimOf("1Gi", "1Gi", nil), holder: holderOf("1Gi", nil), want: claimOf("1Gi", "1Gi", nil),
		},
		"rounded up by the physical provisioner: no resize below the capacity": {
			claim: claimOf("5Gi", "10Gi", nil), holder: holderOf("10Gi", nil), want: claimOf("5Gi", "10Gi", nil),
		},
		"capacity never shrinks": {
			claim: claimOf("1Gi", "2Gi", nil), holder: holderOf("1Gi", nil), want: claimOf("1Gi", "2Gi", nil),
		},
		"under way keeps its times": {
			claim: claimOf("2Gi", "1Gi", resizing), holder: holderOf("1Gi", nil), want: claimOf("2Gi", "1Gi", resizing),
		},
		"the user lowers the request back to the capacity: done": {
			claim: claimOf("1Gi", "1Gi", resizing), holder: holderOf("1Gi", nil),
			want: claimOf("1Gi", "1Gi", func(s *corev1.PersistentVolumeClaimStatus) { s.AllocatedResources = storage("1Gi") }),
		},
		"other conditions stay": {
			claim: claimOf("2Gi", "1Gi", func(s *corev1.PersistentVolumeClaimStatus) {
				resizing(s)
				s.Conditions = append(s.Conditions, corev1.PersistentVolumeClaimCondition{Type: "ModifyingVolume", Status: corev1.ConditionTrue})
			}),
			holder: holderOf("2Gi", nil),
			want: claimOf("2Gi", "2Gi", func(s *corev1.PersistentVolumeClaimStatus) {
				s.AllocatedResources = storage("2Gi")
				s.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: "ModifyingVolume", Status: corev1.ConditionTrue}}
			}),
		},
		"refused": {
			claim: claimOf("2Gi", "1Gi", resizing), holder: holderOf("1Gi", nil), refused: &refusal{size: resource.MustParse("2Gi"), message: "quota"},
			want: claimOf("2Gi", "1Gi", func(s *corev1.PersistentVolumeClaimStatus) {
				s.AllocatedResources = storage("2Gi")
				s.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: corev1.PersistentVolumeClaimControllerResizeInfeasible}
				s.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue,
					Reason: kubeoceanv1alpha1.ReasonVolumeResizeFailed, Message: "quota", LastTransitionTime: now}}
			}),
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := resizedStatus(tc.claim, tc.holder, tc.refused, now)
			if !equality.Semantic.DeepEqual(got, &tc.want.Status) {
				t.Errorf("status\n got %+v\nwant %+v", got, tc.want.Status)
			}
		})
	}
}
