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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// isolatedApp is one virtual cluster's workload: a pod on its binding's
// virtual node with a ConfigMap and a Secret.
type isolatedApp struct {
	w                 *testenv.SyncerWorld
	namespace         string
	pod, cm, secret   string
	physicalNode      string
	physicalPod       string
	physicalConfigMap string
	physicalSecret    string
}

func runIsolatedApp(t *testing.T, w *testenv.SyncerWorld, namespace string) *isolatedApp {
	t.Helper()
	ctx := t.Context()
	a := &isolatedApp{w: w, namespace: namespace, pod: "web", cm: "settings", secret: "creds", physicalNode: w.Binding + "-node"}
	a.physicalPod = kubeoceanv1alpha1.PhysicalName(namespace, a.pod)
	a.physicalConfigMap = kubeoceanv1alpha1.PhysicalName(namespace, a.cm)
	a.physicalSecret = kubeoceanv1alpha1.PhysicalName(namespace, a.secret)
	testenv.CreateNamespace(t, w.Virtual, namespace)
	if _, err := w.Virtual.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: a.cm},
		Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Virtual.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: a.secret},
		StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Bound straight to the virtual node: the second virtual cluster runs
	// no scheduler (nor controller-manager, hence no token to mount).
	pod := workload(namespace, a.pod, w.ClusterID, func(p *corev1.Pod) {
		p.Spec.NodeName = w.VirtualNode(a.physicalNode)
		p.Spec.AutomountServiceAccountToken = ptr.To(false)
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
		p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: a.secret}}}}
		p.Spec.Volumes = []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: a.cm}}}}}
	})
	if _, err := w.Virtual.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *isolatedApp) waitRunning(t *testing.T) {
	t.Helper()
	testenv.WaitFor(t, 60*time.Second, fmt.Sprintf("virtual pod %s/%s of %s runs", a.namespace, a.pod, a.w.Binding), func(ctx context.Context) (bool, error) {
		p, err := a.w.Virtual.CoreV1().Pods(a.namespace).Get(ctx, a.pod, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Errorf("phase %s", p.Status.Phase)
	})
}

// intact checks the app's physical pod and copies exist, unchanged since
// they were made (same UID) and carry their binding's identity.
func (a *isolatedApp) intact(ctx context.Context, uids map[string]string) error {
	physical := a.w.Physical.CoreV1()
	pod, err := physical.Pods(a.w.Mount).Get(ctx, a.physicalPod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("physical pod of %s: %w", a.w.Binding, err)
	}
	cm, err := physical.ConfigMaps(a.w.Mount).Get(ctx, a.physicalConfigMap, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("physical ConfigMap of %s: %w", a.w.Binding, err)
	}
	secret, err := physical.Secrets(a.w.Mount).Get(ctx, a.physicalSecret, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("physical Secret of %s: %w", a.w.Binding, err)
	}
	for kind, obj := range map[string]metav1.Object{"pod": pod, "ConfigMap": cm, "Secret": secret} {
		if obj.GetDeletionTimestamp() != nil {
			return fmt.Errorf("physical %s %s of %s is being deleted", kind, obj.GetName(), a.w.Binding)
		}
		if want, seen := uids[kind], string(obj.GetUID()); want != "" && want != seen {
			return fmt.Errorf("physical %s %s of %s was replaced", kind, obj.GetName(), a.w.Binding)
		}
		uids[kind] = string(obj.GetUID())
		if got := obj.GetLabels()[kubeoceanv1alpha1.LabelBindingUID]; got != a.w.BindingUID(ctx) {
			return fmt.Errorf("physical %s %s of %s has binding UID %q", kind, obj.GetName(), a.w.Binding, got)
		}
	}
	if pod.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("physical pod of %s is %s", a.w.Binding, pod.Status.Phase)
	}
	return nil
}

// TestTwoVirtualClustersShareAMountNamespace: two virtual clusters bind the
// same physical cluster under the same cluster ID and mount namespace. Both
// run their workloads side by side (neither syncer takes the other's pods
// for orphans or collects its copies), and unbinding one leaves the other's
// pods, copies and virtual nodes untouched.
func TestTwoVirtualClustersShareAMountNamespace(t *testing.T) {
	// The second virtual cluster: an apiserver is all a syncer needs.
	second := controlplane.StartT(t, controlplane.Options{Name: "virtual-2"})
	if err := testenv.InstallCRDs(t.Context(), second.Config()); err != nil {
		t.Fatal(err)
	}
	const clusterID = "shared" // the manager of each virtual cluster sees no clash
	a := runIsolatedApp(t, lendNodeFrom(t, virtualCluster, "iso-a", clusterID), "team-a")
	b := runIsolatedApp(t, lendNodeFrom(t, second, "iso-b", clusterID), "team-b")
	if a.w.Mount != b.w.Mount {
		t.Fatalf("mount namespaces %s and %s; the test needs one", a.w.Mount, b.w.Mount)
	}
	a.waitRunning(t)
	b.waitRunning(t)

	ctx := t.Context()
	uidsA, uidsB := map[string]string{}, map[string]string{}
	// Side by side for a while: a syncer that took the other's objects
	// for orphans or unused copies (30 s grace) would have deleted them.
	deadline := time.Now().Add(35 * time.Second)
	for time.Now().Before(deadline) {
		for app, uids := range map[*isolatedApp]map[string]string{a: uidsA, b: uidsB} {
			if err := app.intact(ctx, uids); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
	}

	if err := a.w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Delete(ctx, a.w.Binding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "binding "+a.w.Binding+" is gone, and its physical pod", func(ctx context.Context) (bool, error) {
		_, errBinding := a.w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, a.w.Binding, metav1.GetOptions{})
		_, errPod := a.w.Physical.CoreV1().Pods(a.w.Mount).Get(ctx, a.physicalPod, metav1.GetOptions{})
		return apierrors.IsNotFound(errBinding) && apierrors.IsNotFound(errPod), fmt.Errorf("binding: %v, physical pod: %v", errBinding, errPod)
	})
	for _, name := range []string{a.physicalConfigMap, a.physicalSecret} {
		_, errCM := a.w.Physical.CoreV1().ConfigMaps(a.w.Mount).Get(ctx, name, metav1.GetOptions{})
		_, errSecret := a.w.Physical.CoreV1().Secrets(a.w.Mount).Get(ctx, name, metav1.GetOptions{})
		if !apierrors.IsNotFound(errCM) || !apierrors.IsNotFound(errSecret) {
			t.Errorf("a copy %s of the unbound binding is left: %v, %v", name, errCM, errSecret)
		}
	}
	if err := b.intact(ctx, uidsB); err != nil {
		t.Fatalf("after unbinding %s: %v", a.w.Binding, err)
	}
	node, err := b.w.Virtual.CoreV1().Nodes().Get(ctx, b.w.VirtualNode(b.physicalNode), metav1.GetOptions{})
	if err != nil || node.DeletionTimestamp != nil || b.w.Taint(t, b.physicalNode, kubeoceanv1alpha1.TaintVirtualNodeDeleting) != nil {
		t.Fatalf("virtual node of %s after unbinding %s: %v, %v", b.w.Binding, a.w.Binding, node, err)
	}
	virtualPod, err := b.w.Virtual.CoreV1().Pods(b.namespace).Get(ctx, b.pod, metav1.GetOptions{})
	if err != nil || virtualPod.DeletionTimestamp != nil || virtualPod.Status.Phase != corev1.PodRunning {
		t.Fatalf("virtual pod of %s after unbinding %s: %v, %v", b.w.Binding, a.w.Binding, virtualPod, err)
	}
}
