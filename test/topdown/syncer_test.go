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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// lendNode starts a syncer for a new binding and lends it one kwok node.
func lendNode(t *testing.T, binding, clusterID string) *testenv.SyncerWorld {
	t.Helper()
	return lendNodeFrom(t, virtualCluster, binding, clusterID)
}

// lendNodeFrom is lendNode for a binding in the virtual cluster virtual.
func lendNodeFrom(t *testing.T, virtual *controlplane.Cluster, binding, clusterID string) *testenv.SyncerWorld {
	t.Helper()
	w := testenv.StartSyncer(t, virtual, physicalCluster, binding, clusterID,
		syncer.Options{Workers: 2, PodWorkers: 8, PhysicalQPS: 200, PhysicalBurst: 400})
	node := testenv.KwokNode(binding+"-node", "64", "256Gi", map[string]string{"suite": binding})
	node.Status.Capacity[corev1.ResourcePods] = resource.MustParse("500")
	node.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("500")
	w.LendNode(t, node)
	w.WaitCPU(t, binding+"-node", "64")
	return w
}

// workload is a pod the virtual scheduler places on the binding's nodes.
func workload(namespace, name, clusterID string, mutate func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{kubeoceanv1alpha1.LabelClusterID: clusterID},
			Tolerations:  []corev1.Toleration{{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists}},
			Containers:   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	return pod
}

func waitDefaultServiceAccount(t *testing.T, w *testenv.SyncerWorld, namespace string) {
	t.Helper()
	testenv.WaitFor(t, 30*time.Second, "the default ServiceAccount in "+namespace, func(ctx context.Context) (bool, error) {
		_, err := w.Virtual.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
}

// TestSyncerTopDown runs the whole syncer: a pod the virtual scheduler puts
// on a virtual node runs in the physical cluster with its ConfigMap, Secret,
// image-pull Secret and service-account token, reports Running, follows a
// ConfigMap edit, and leaves nothing behind when it and its dependents go.
func TestSyncerTopDown(t *testing.T) {
	w := lendNode(t, "td", "cls-td")
	ctx := t.Context()
	ns := "shop"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	objects := []struct {
		create func() error
	}{
		{func() error {
			_, err := w.Virtual.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings"},
				Data: map[string]string{"color": "blue"}}, metav1.CreateOptions{})
			return err
		}},
		{func() error {
			_, err := w.Virtual.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
				StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{})
			return err
		}},
		{func() error {
			_, err := w.Virtual.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "registry"},
				Type: corev1.SecretTypeDockerConfigJson, StringData: map[string]string{".dockerconfigjson": `{"auths":{}}`}}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, o := range objects {
		if err := o.create(); err != nil {
			t.Fatal(err)
		}
	}
	pod := workload(ns, "web", "cls-td", func(p *corev1.Pod) {
		p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
		p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "settings", MountPath: "/etc/settings"}}
		p.Spec.Volumes = []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}
	})
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	physicalName := kubeoceanv1alpha1.PhysicalName(ns, "web")
	t.Run("the pod runs in the physical cluster with every name mapped", func(t *testing.T) {
		testenv.WaitFor(t, 60*time.Second, "the virtual pod reports Running", func(ctx context.Context) (bool, error) {
			p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return p.Status.Phase == corev1.PodRunning, fmt.Errorf("phase %s on node %q", p.Status.Phase, p.Spec.NodeName)
		})
		physical, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, physicalName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if physical.Spec.NodeName != "td-node" || physical.Labels[kubeoceanv1alpha1.LabelManagedBy] != kubeoceanv1alpha1.ManagedByKubeocean {
			t.Errorf("physical pod on %q with labels %v", physical.Spec.NodeName, physical.Labels)
		}
		if got, want := physical.Spec.ImagePullSecrets[0].Name, kubeoceanv1alpha1.PhysicalName(ns, "registry"); got != want {
			t.Errorf("imagePullSecret %q, want %q", got, want)
		}
		if got, want := physical.Spec.Containers[0].EnvFrom[0].SecretRef.Name, kubeoceanv1alpha1.PhysicalName(ns, "creds"); got != want {
			t.Errorf("envFrom secret %q, want %q", got, want)
		}
		for _, name := range []string{kubeoceanv1alpha1.PhysicalName(ns, "creds"), kubeoceanv1alpha1.PhysicalName(ns, "registry")} {
			if _, err := w.Physical.CoreV1().Secrets(w.Mount).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("physical Secret %s: %v", name, err)
			}
		}
	})

	t.Run("a ConfigMap edit reaches the physical copy", func(t *testing.T) {
		cm, err := w.Virtual.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["color"] = "green"
		if _, err := w.Virtual.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 30*time.Second, "the physical ConfigMap turns green", func(ctx context.Context) (bool, error) {
			copy, err := w.Physical.CoreV1().ConfigMaps(w.Mount).Get(ctx, kubeoceanv1alpha1.PhysicalName(ns, "settings"), metav1.GetOptions{})
			return err == nil && copy.Data["color"] == "green", err
		})
	})

	t.Run("deleting the pod and its dependents leaves nothing behind", func(t *testing.T) {
		if err := w.Virtual.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		testenv.WaitFor(t, 60*time.Second, "both pods are gone", func(ctx context.Context) (bool, error) {
			_, errV := w.Virtual.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
			_, errP := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, physicalName, metav1.GetOptions{})
			return apierrors.IsNotFound(errV) && apierrors.IsNotFound(errP), fmt.Errorf("virtual: %v, physical: %v", errV, errP)
		})
		if err := w.Virtual.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"creds", "registry"} {
			if err := w.Virtual.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		testenv.WaitFor(t, 90*time.Second, "no Kubeocean object is left in the mount namespace and the virtual objects are gone", func(ctx context.Context) (bool, error) {
			selector := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean}
			pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, selector)
			if err != nil {
				return false, err
			}
			cms, err := w.Physical.CoreV1().ConfigMaps(w.Mount).List(ctx, selector)
			if err != nil {
				return false, err
			}
			secrets, err := w.Physical.CoreV1().Secrets(w.Mount).List(ctx, selector)
			if err != nil {
				return false, err
			}
			_, errCM := w.Virtual.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
			left := len(pods.Items) + len(cms.Items) + len(secrets.Items)
			return left == 0 && apierrors.IsNotFound(errCM), fmt.Errorf("%d physical objects left, virtual ConfigMap: %v", left, errCM)
		})
	})
}
