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
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestDeploymentMode runs a manager that renders syncer Deployments from a
// copy of the shipped templates. The virtual cluster has no kubelet, so the
// syncers never become available: the test covers rendering, rollout of a
// template change, recreation, unbinding and forced unbinding.
func TestDeploymentMode(t *testing.T) {
	w := newWorld(t)
	templateDir := t.TempDir()
	shipped, err := os.ReadFile(testenv.RepoPath("manifests/deploy/syncer-template/deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(templateDir, "deployment.yaml"), shipped)
	// The pods of the rendered Deployments are created (never run) when
	// their ServiceAccount exists.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: "kubeocean-syncer"}}
	if _, err := w.virtual.CoreV1().ServiceAccounts(systemNamespace).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	m := startManager(t, func(opts *app.Options, o *manager.Options) {
		opts.Serving.MetricsBindAddress, opts.Serving.HealthProbeBindAddress = freeAddr(t), freeAddr(t)
		o.SyncerMode, o.SyncerTemplateDir, o.SyncerImage = manager.ModeDeployment, templateDir, "kubeocean-syncer:test-1"
		o.TemplatePollInterval = 200 * time.Millisecond
	})
	const name = "mgr-deploy"
	deployments := w.virtual.AppsV1().Deployments(systemNamespace)
	deploymentName := syncertemplate.ObjectName(name)
	w.putSecret(t, name+"-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
	binding := w.createBinding(t, name, name)
	t.Cleanup(func() { w.deleteBinding(t, name, 60*time.Second) })

	var first *appsv1.Deployment
	t.Run("the syncer Deployment is rendered from the templates", func(t *testing.T) {
		first = waitDeployment(t, w, deploymentName, func(d *appsv1.Deployment) error { return nil })
		owner := metav1.GetControllerOf(first)
		if owner == nil || owner.UID != binding.UID || owner.Kind != "ClusterBinding" {
			t.Errorf("controller owner = %+v", owner)
		}
		container := first.Spec.Template.Spec.Containers[0]
		if container.Image != "kubeocean-syncer:test-1" || !slices.Contains(container.Args, "--cluster-binding="+name) {
			t.Errorf("container = %s %v", container.Image, container.Args)
		}
		if first.Labels[kubeoceanv1alpha1.LabelAppManagedBy] != kubeoceanv1alpha1.AppManagedByManager || first.Labels[kubeoceanv1alpha1.LabelClusterBinding] != name {
			t.Errorf("labels = %v", first.Labels)
		}
		b := w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingPending, kubeoceanv1alpha1.ReasonSyncerUnavailable, 30*time.Second)
		connected := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionConnected)
		syncerReady := meta.FindStatusCondition(b.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionSyncerReady)
		if connected == nil || connected.Status != metav1.ConditionTrue || syncerReady == nil || syncerReady.Status != metav1.ConditionFalse {
			t.Errorf("Connected %+v, SyncerReady %+v", connected, syncerReady)
		}
	})

	t.Run("a template change rolls out", func(t *testing.T) {
		edited := strings.Replace(string(shipped), "      serviceAccountName:", "      priorityClassName: \"\"\n      hostname: edited\n      serviceAccountName:", 1)
		writeFile(t, filepath.Join(templateDir, "deployment.yaml"), []byte(edited))
		waitDeployment(t, w, deploymentName, func(d *appsv1.Deployment) error {
			if d.Spec.Template.Spec.Hostname != "edited" {
				return fmt.Errorf("hostname %q", d.Spec.Template.Spec.Hostname)
			}
			return nil
		})
	})

	t.Run("a Deployment deleted by hand comes back", func(t *testing.T) {
		current, err := deployments.Get(t.Context(), deploymentName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := deployments.Delete(t.Context(), deploymentName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitDeployment(t, w, deploymentName, func(d *appsv1.Deployment) error {
			if d.UID == current.UID {
				return fmt.Errorf("still the deleted Deployment")
			}
			return nil
		})
	})

	t.Run("metrics and health are served", func(t *testing.T) { checkServing(t, m) })
	t.Run("forced unbinding finishes without the syncer's cleanup", func(t *testing.T) { checkForcedUnbind(t, w) })
	t.Run("unbinding deletes the syncer Deployment", func(t *testing.T) {
		w.deleteBinding(t, name, 60*time.Second)
		if _, err := deployments.Get(t.Context(), deploymentName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the syncer Deployment outlived its binding: %v", err)
		}
	})
}

// checkServing checks the manager's health probes and metrics.
func checkServing(t *testing.T, m *runningManager) {
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet("http://" + m.opts.Serving.HealthProbeBindAddress + path); code != http.StatusOK {
			t.Errorf("%s = %d %s", path, code, body)
		}
	}
	waitFor(t, 10*time.Second, "the manager's metrics", func(context.Context) (bool, error) {
		_, body := httpGet("http://" + m.opts.Serving.MetricsBindAddress + "/metrics")
		for _, want := range []string{
			`kubeocean_manager_cluster_bindings{phase="Pending"}`,
			`kubeocean_manager_syncers_running 0`,
			`kubeocean_controller_reconcile_total{controller="manager-clusterbinding",result="requeue_after"}`,
			`kubeocean_manager_connectivity_check_duration_seconds_count{result="success"}`,
		} {
			if !strings.Contains(body, want) {
				return false, fmt.Errorf("missing %s", want)
			}
		}
		return true, nil
	})
}

// checkForcedUnbind deletes a binding whose syncer put its finalizer on and
// cannot clean up: unbinding waits, then finishes once forced.
func checkForcedUnbind(t *testing.T, w *world) {
	deployments := w.virtual.AppsV1().Deployments(systemNamespace)
	const stuck = "mgr-stuck"
	w.putSecret(t, stuck+"-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
	w.createBinding(t, stuck, stuck)
	stuckDeployment := syncertemplate.ObjectName(stuck)
	waitDeployment(t, w, stuckDeployment, func(*appsv1.Deployment) error { return nil })
	// Play a syncer that put its finalizer on and can no longer clean up.
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q,%q]}}`, kubeoceanv1alpha1.FinalizerClusterBindingManager, kubeoceanv1alpha1.FinalizerClusterBindingSyncer)
	if _, err := w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Patch(t.Context(), stuck, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Delete(t.Context(), stuck, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.waitPhase(t, stuck, kubeoceanv1alpha1.ClusterBindingPending, kubeoceanv1alpha1.ReasonUnbinding, 30*time.Second)
	if _, err := deployments.Get(t.Context(), stuckDeployment, metav1.GetOptions{}); err != nil {
		t.Fatalf("the syncer Deployment must stay while the syncer cleans up: %v", err)
	}

	force := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, kubeoceanv1alpha1.AnnotationForceUnbind)
	if _, err := w.virtualOcean.KubeoceanV1alpha1().ClusterBindings().Patch(t.Context(), stuck, types.MergePatchType, []byte(force), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	w.deleteBinding(t, stuck, 60*time.Second)
	if _, err := deployments.Get(t.Context(), stuckDeployment, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the syncer Deployment outlived its forced unbinding: %v", err)
	}
	waitFor(t, 10*time.Second, "the ForceUnbind event", func(ctx context.Context) (bool, error) {
		return w.hasEvent(ctx, stuck, kubeoceanv1alpha1.EventForceUnbind)
	})
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	// Write then rename, as the kubelet swaps a mounted ConfigMap, so the
	// manager never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitDeployment waits until the syncer Deployment exists and check passes.
func waitDeployment(t *testing.T, w *world, name string, check func(*appsv1.Deployment) error) *appsv1.Deployment {
	t.Helper()
	var found *appsv1.Deployment
	waitFor(t, 30*time.Second, "syncer Deployment "+name, func(ctx context.Context) (bool, error) {
		d, err := w.virtual.AppsV1().Deployments(systemNamespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if d.DeletionTimestamp != nil {
			return false, fmt.Errorf("being deleted")
		}
		found = d
		err = check(d)
		return err == nil, err
	})
	return found
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
