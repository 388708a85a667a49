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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestPodStartsWhenItsConfigMapAppears: a pod whose ConfigMap is made later
// (as cert-manager or external-secrets do) waits, retried with a growing
// backoff; when the ConfigMap appears, the pod is created in the physical
// cluster within seconds, woken by the ConfigMap's event rather than by the
// next retry.
func TestPodStartsWhenItsConfigMapAppears(t *testing.T) {
	w := lendNode(t, "wake", "cls-wake")
	ctx := t.Context()
	ns := "wake"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	pod := workload(ns, "late", "cls-wake", func(p *corev1.Pod) {
		p.Spec.AutomountServiceAccountToken = new(bool)
		p.Spec.Volumes = []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "made-later"}}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "settings", MountPath: "/etc/settings"}}
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Long enough for the failing key's backoff to grow past several
	// seconds (5 ms doubling: retries 20 s and 41 s after the first).
	testenv.WaitFor(t, 30*time.Second, "the pod shows it waits for its ConfigMap", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "late", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == kubeoceanv1alpha1.PodConditionDependenciesReady && c.Status == corev1.ConditionFalse {
				return true, nil
			}
		}
		return false, nil
	})
	time.Sleep(25 * time.Second)

	made := time.Now()
	if _, err := w.Virtual.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "made-later"},
		Data: map[string]string{"color": "green"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "late")
	testenv.WaitFor(t, 3*time.Second, "the physical pod exists soon after its ConfigMap appeared", func(ctx context.Context) (bool, error) {
		_, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, physicalName, metav1.GetOptions{})
		return err == nil, err
	})
	t.Logf("physical pod created %v after its ConfigMap appeared", time.Since(made).Round(10*time.Millisecond))
}
