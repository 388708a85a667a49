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

package manager

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestUnbindingLeavesNothing binds a cluster through the manager (in-process
// syncers), runs a pod with a ConfigMap on a virtual node, then deletes the
// binding: the pod is evicted, its physical twin and copies are removed,
// the virtual ConfigMap loses every Kubeocean mark, the policy its
// finalizer, and the binding goes.
func TestUnbindingLeavesNothing(t *testing.T) {
	const name, clusterID, node, ns = "mgr-unbind", "mgr-unbind", "mgr-unbind-node", "unbind-apps"
	w := newWorld(t)
	startManager(t, func(_ *app.Options, o *manager.Options) { o.SyncerMode = manager.ModeInProcess })
	ctx := t.Context()
	if _, err := w.physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(node, "4", "8Gi", map[string]string{"suite": name}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pinned to the binding's mount namespace: its unbinding releases the
	// reclaim finalizer of such a policy (an unpinned one keeps it for a
	// binding of the same name elsewhere).
	rlp := &kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: name, MountNamespace: "mount-" + clusterID}}
	if _, err := w.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, rlp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.putSecret(t, name+"-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
	w.createBinding(t, name, clusterID)
	w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingReady, "", 60*time.Second)

	createNamespace(t, w.virtual, ns)
	if _, err := w.virtual.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vnode := kubeoceanv1alpha1.VirtualNodeName(clusterID, node)
	waitFor(t, 60*time.Second, "the virtual node", func(ctx context.Context) (bool, error) {
		_, err := w.virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{})
		return err == nil, err
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"}, Spec: corev1.PodSpec{
		NodeName: vnode, AutomountServiceAccountToken: new(bool),
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}},
	}}
	waitFor(t, 30*time.Second, "the namespace's default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := w.virtual.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	if _, err := w.virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the pod runs", func(ctx context.Context) (bool, error) {
		p, err := w.virtual.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})

	w.deleteBinding(t, name, 120*time.Second)

	mount := "mount-" + clusterID
	managed := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean}
	pods, err := w.physical.CoreV1().Pods(mount).List(ctx, managed)
	if err != nil {
		t.Fatal(err)
	}
	cms, err := w.physical.CoreV1().ConfigMaps(mount).List(ctx, managed)
	if err != nil {
		t.Fatal(err)
	}
	secrets, err := w.physical.CoreV1().Secrets(mount).List(ctx, managed)
	if err != nil {
		t.Fatal(err)
	}
	if left := len(pods.Items) + len(cms.Items) + len(secrets.Items); left != 0 {
		t.Errorf("%d Kubeocean objects left in the mount namespace", left)
	}
	if _, err := w.virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("virtual node %s outlived its binding (%v)", vnode, err)
	}
	if _, err := w.virtual.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod of the unbound node is still there (%v)", err)
	}
	cm, err := w.virtual.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Finalizers) != 0 || cm.Labels[kubeoceanv1alpha1.SyncedByLabel(clusterID)] != "" || cm.Labels[kubeoceanv1alpha1.LabelManagedBy] != "" {
		t.Errorf("the virtual ConfigMap keeps Kubeocean marks: %+v", cm.ObjectMeta)
	}
	got, err := w.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(got.Finalizers, kubeoceanv1alpha1.FinalizerResourceLeasingPolicy) {
		t.Errorf("the policy keeps its reclaim finalizer: %v", got.Finalizers)
	}
}
