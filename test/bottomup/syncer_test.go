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

package bottomup

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// startSyncer runs a syncer for a new binding selecting nodes labelled
// suite=<binding>.
func startSyncer(t *testing.T, binding, clusterID string) *testenv.SyncerWorld {
	t.Helper()
	return testenv.StartSyncer(t, virtualCluster, physicalCluster, binding, clusterID,
		syncer.Options{Workers: 2, PhysicalQPS: 50, PhysicalBurst: 100})
}

// waitPodRunning creates a pod bound to a virtual node and waits until the
// syncer runs it in the physical cluster and reports it Running.
func waitPodRunning(t *testing.T, w *testenv.SyncerWorld, namespace, name, node string) {
	t.Helper()
	if _, err := w.Virtual.CoreV1().Pods(namespace).Create(t.Context(), virtualPodOn(namespace, name, node), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, name+" reports Running", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning && p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] != "", nil
	})
}

// waitPodGone waits until a virtual pod and its physical twin are gone.
func waitPodGone(t *testing.T, w *testenv.SyncerWorld, namespace, name string) {
	t.Helper()
	testenv.WaitFor(t, 60*time.Second, name+" and its physical twin are gone", func(ctx context.Context) (bool, error) {
		_, errV := w.Virtual.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		_, errP := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(namespace, name), metav1.GetOptions{})
		return apierrors.IsNotFound(errV) && apierrors.IsNotFound(errP), nil
	})
}

func virtualPodOn(namespace, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
	}
}
