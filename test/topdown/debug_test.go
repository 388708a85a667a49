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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// waitPhysicalPod waits until the physical pod of ns/name exists and
// passes ok, and returns it.
func waitPhysicalPod(t *testing.T, w *testenv.SyncerWorld, ns, name, what string, ok func(*corev1.Pod) (bool, error)) *corev1.Pod {
	t.Helper()
	var physical *corev1.Pod
	testenv.WaitFor(t, 60*time.Second, what, func(ctx context.Context) (bool, error) {
		var err error
		if physical, err = w.Physical.CoreV1().Pods(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, name), metav1.GetOptions{}); err != nil {
			return false, err
		}
		return ok(physical)
	})
	return physical
}

// TestKubectlDebugReachesPhysicalPod does what kubectl debug does: it adds
// an ephemeral container to a running virtual pod through the
// ephemeralcontainers subresource. The container is added to the physical
// pod, with the ConfigMap it reads copied and renamed; the status the
// physical kubelet reports for it comes back to the virtual pod.
func TestKubectlDebugReachesPhysicalPod(t *testing.T) {
	w := lendNode(t, "debug", "cls-debug")
	ctx := t.Context()
	ns := "debug"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	if _, err := w.Virtual.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "debug-settings"},
		Data: map[string]string{"LEVEL": "trace"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, workload(ns, "web", "cls-debug", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "the virtual pod runs", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning, fmt.Errorf("phase %s", p.Status.Phase)
	})

	virtual, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	virtual.Spec.EphemeralContainers = append(virtual.Spec.EphemeralContainers, corev1.EphemeralContainer{
		TargetContainerName: "app",
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: "busybox:1.36", Command: []string{"sh"}, Stdin: true, TTY: true,
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "debug-settings"}}}},
		},
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).UpdateEphemeralContainers(ctx, "web", virtual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	copyName := kubeoceanv1alpha1.PhysicalName(ns, "debug-settings")
	physical := waitPhysicalPod(t, w, ns, "web", "the physical pod has the debug container", func(p *corev1.Pod) (bool, error) {
		for _, c := range p.Spec.EphemeralContainers {
			if c.Name == "debugger" {
				return true, nil
			}
		}
		return false, fmt.Errorf("ephemeral containers %d", len(p.Spec.EphemeralContainers))
	})
	c := physical.Spec.EphemeralContainers[0]
	if c.TargetContainerName != "app" || c.Image != "busybox:1.36" {
		t.Errorf("physical debug container targets %q with image %q", c.TargetContainerName, c.Image)
	}
	if got := c.EnvFrom[0].ConfigMapRef.Name; got != copyName {
		t.Errorf("debug container reads ConfigMap %q, want the copy %q", got, copyName)
	}
	if copy, err := w.Physical.CoreV1().ConfigMaps(w.Mount).Get(ctx, copyName, metav1.GetOptions{}); err != nil || copy.Data["LEVEL"] != "trace" {
		t.Errorf("ConfigMap copy %s: %v (%v)", copyName, copy, err)
	}

	// The physical kubelet starts it (kwok does not report ephemeral
	// containers: the test does).
	started := metav1.Now()
	physical.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{
		Name: "debugger", Image: "busybox:1.36", ImageID: "busybox:1.36", ContainerID: "kwok://debugger",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
	}}
	if _, err := w.Physical.CoreV1().Pods(w.Mount).UpdateStatus(ctx, physical, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 30*time.Second, "the virtual pod shows the debug container running", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "debugger" && s.State.Running != nil {
				return true, nil
			}
		}
		return false, fmt.Errorf("ephemeral container statuses %+v", p.Status.EphemeralContainerStatuses)
	})
}

// TestVolumePluginSecretsCopied: a pod with an inline CSI volume whose
// driver gets a nodePublishSecretRef runs with the Secret copied to the
// physical cluster and the reference renamed to the copy; the downward
// API's spec.serviceAccountName (env only: volumes cannot ask for it)
// answers the virtual pod's service account, not the physical pod's.
func TestVolumePluginSecretsCopied(t *testing.T) {
	w := lendNode(t, "csisecret", "cls-csisecret")
	ctx := t.Context()
	ns := "vault"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	if _, err := w.Virtual.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Virtual.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "store-creds"},
		StringData: map[string]string{"clientid": "me", "clientsecret": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	saField := &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.serviceAccountName"}
	app := workload(ns, "app", "cls-csisecret", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "reader"
		p.Spec.Volumes = []corev1.Volume{
			{Name: "secrets-store", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: "secrets-store.csi.k8s.io", ReadOnly: ptr.To(true),
				VolumeAttributes:     map[string]string{"secretProviderClass": "app"},
				NodePublishSecretRef: &corev1.LocalObjectReference{Name: "store-creds"},
			}}},
		}
		c := &p.Spec.Containers[0]
		c.VolumeMounts = []corev1.VolumeMount{{Name: "secrets-store", MountPath: "/mnt/secrets", ReadOnly: true}}
		c.Env = []corev1.EnvVar{{Name: "SERVICE_ACCOUNT", ValueFrom: &corev1.EnvVarSource{FieldRef: saField}}}
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, app, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	physical := waitPhysicalPod(t, w, ns, "app", "the physical pod exists", func(*corev1.Pod) (bool, error) { return true, nil })

	copyName := kubeoceanv1alpha1.PhysicalName(ns, "store-creds")
	var csi *corev1.CSIVolumeSource
	for _, v := range physical.Spec.Volumes {
		if v.Name == "secrets-store" {
			csi = v.CSI
		}
	}
	if csi == nil || csi.NodePublishSecretRef == nil || csi.NodePublishSecretRef.Name != copyName {
		t.Fatalf("physical CSI volume %+v, want nodePublishSecretRef %s", csi, copyName)
	}
	copy, err := w.Physical.CoreV1().Secrets(w.Mount).Get(ctx, copyName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Secret copy %s: %v", copyName, err)
	}
	if string(copy.Data["clientsecret"]) != "s3cret" {
		t.Errorf("Secret copy data %v", copy.Data)
	}

	if env := physical.Spec.Containers[0].Env[0]; env.Name != "SERVICE_ACCOUNT" || env.ValueFrom != nil || env.Value != "reader" {
		t.Errorf("physical env %+v, want SERVICE_ACCOUNT=reader", env)
	}
}
