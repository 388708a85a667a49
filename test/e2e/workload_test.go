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

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/manager/syncertemplate"
	"github.com/kubeocean/kubeocean/internal/syncer/tenantmeta"
	"github.com/kubeocean/kubeocean/test/stack"
)

// createWorkload runs the sample application and a pod with a CSI volume.
func createWorkload(t *testing.T) {
	ctx, s := t.Context(), world
	_, err := s.Physical.Kubectl(ctx, "apply", "-f", "testdata/storage-physical.yaml")
	step(t, "physical storage class", err)
	// The volume names a disk by its CSI handle: copied only once the
	// lender allows the driver.
	_, err = s.Physical.Kubectl(ctx, "patch", "resourceleasingpolicy", stack.BindingName, "--type=merge",
		"-p", `{"spec":{"allowances":{"csiDrivers":["disk.csi.example.com"]}}}`)
	step(t, "allow the volume's CSI driver", err)
	step(t, "deploy the sample application", s.DeployApp(ctx))
	_, err = s.Virtual.Kubectl(ctx, "apply", "-f", "testdata/storage-virtual.yaml")
	step(t, "apply the volume", err)
	waitFor(t, "claim demo/db-data is Bound", func(ctx context.Context) (string, error) {
		claim, err := s.VirtualKube.CoreV1().PersistentVolumeClaims(stack.AppNamespace).Get(ctx, "db-data", metav1.GetOptions{})
		if err != nil || claim.Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("%v %v", err, claim.Status.Phase), nil
		}
		return "", nil
	})
	_, err = s.Virtual.Kubectl(ctx, "apply", "-f", "testdata/storage-pod.yaml")
	step(t, "create the pod with the volume", err)
	step(t, "application running", s.WaitAppRunning(waitCtx(t)))
	waitPhysicalPodRunning(t, "db")
}

// changeWorkload changes what Kubeocean keeps in step, one kind after the
// other, and waits for each change to arrive.
func changeWorkload(t *testing.T) {
	ctx, s := t.Context(), world
	kubectlV := func(args ...string) {
		t.Helper()
		_, err := s.Virtual.Kubectl(ctx, args...)
		step(t, strings.Join(args, " "), err)
	}

	kubectlV("-n", stack.AppNamespace, "patch", "configmap", "web-config", "--type=merge", "-p", `{"data":{"GREETING":"edited"}}`)
	waitCopy(t, "ConfigMap web-config", func(ctx context.Context) (bool, error) {
		copies, err := s.PhysicalKube.CoreV1().ConfigMaps(stack.MountNamespace).List(ctx, metav1.ListOptions{})
		return slices.ContainsFunc(copies.Items, func(c corev1.ConfigMap) bool {
			return c.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] == "web-config" && c.Data["GREETING"] == "edited"
		}), err
	})
	kubectlV("-n", stack.AppNamespace, "patch", "secret", "web-credentials", "--type=merge", "-p", `{"stringData":{"password":"edited"}}`)
	waitCopy(t, "Secret web-credentials", func(ctx context.Context) (bool, error) {
		copies, err := s.PhysicalKube.CoreV1().Secrets(stack.MountNamespace).List(ctx, metav1.ListOptions{})
		return slices.ContainsFunc(copies.Items, func(c corev1.Secret) bool {
			return c.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] == "web-credentials" && string(c.Data["password"]) == "edited"
		}), err
	})
	kubectlV("-n", storageNamespace, "patch", "secret", "disk-creds", "--type=merge", "-p", `{"stringData":{"key":"edited"}}`)
	waitCopy(t, "CSI Secret disk-creds", func(ctx context.Context) (bool, error) {
		secret, err := s.PhysicalKube.CoreV1().Secrets(storageNamespace).Get(ctx, "disk-creds", metav1.GetOptions{})
		return err == nil && string(secret.Data["key"]) == "edited", ignoreNotFound(err)
	})
	kubectlV("patch", "pv", "db-data", "--type=merge", "-p", `{"spec":{"capacity":{"storage":"2Gi"}}}`)
	kubectlV("-n", stack.AppNamespace, "patch", "pvc", "db-data", "--type=merge", "-p", `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	twoGi := resource.MustParse("2Gi")
	waitCopy(t, "PV and PVC db-data expanded", func(ctx context.Context) (bool, error) {
		volumes, err := s.PhysicalKube.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		claims, err := s.PhysicalKube.CoreV1().PersistentVolumeClaims(stack.MountNamespace).List(ctx, metav1.ListOptions{})
		return slices.ContainsFunc(volumes.Items, func(v corev1.PersistentVolume) bool {
			return v.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] == "db-data" && v.Spec.Capacity.Storage().Cmp(twoGi) == 0
		}) && slices.ContainsFunc(claims.Items, func(c corev1.PersistentVolumeClaim) bool {
			return c.Annotations[kubeoceanv1alpha1.AnnotationVirtualName] == "db-data" && c.Spec.Resources.Requests.Storage().Cmp(twoGi) == 0
		}), err
	})
	kubectlV("-n", stack.AppNamespace, "label", "pod", "db", "tier=data")
	waitCopy(t, "label of pod db", func(ctx context.Context) (bool, error) {
		pods, err := s.PhysicalKube.CoreV1().Pods(stack.MountNamespace).List(ctx, metav1.ListOptions{LabelSelector: tenantmeta.LabelKey("tier") + "=data"})
		return err == nil && len(pods.Items) == 1, err
	})

	// Bottom-up: a policy change resizes the virtual nodes, a CSINode
	// change reaches its mirror.
	_, err := s.Physical.Kubectl(ctx, "patch", "resourceleasingpolicy", stack.BindingName, "--type=json",
		"-p", `[{"op":"replace","path":"/spec/resourceLimits/0/percent","value":50}]`)
	step(t, "change the policy", err)
	waitCopy(t, "virtual node capacity after the policy change", func(ctx context.Context) (bool, error) {
		node, err := s.VirtualKube.CoreV1().Nodes().Get(ctx, "vnode-"+stack.ClusterID+"-node-b", metav1.GetOptions{})
		return err == nil && node.Status.Allocatable.Cpu().String() == "2", err
	})
	csiNode, err := s.PhysicalKube.StorageV1().CSINodes().Get(ctx, "node-a", metav1.GetOptions{})
	step(t, "get physical CSINode", err)
	csiNode.Spec.Drivers = append(csiNode.Spec.Drivers, storagev1.CSINodeDriver{Name: "files.csi.example.com", NodeID: "node-a"})
	_, err = s.PhysicalKube.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
	step(t, "update physical CSINode", err)
	waitCopy(t, "virtual CSINode with the second driver", func(ctx context.Context) (bool, error) {
		mirror, err := s.VirtualKube.StorageV1().CSINodes().Get(ctx, "vnode-"+stack.ClusterID+"-node-a", metav1.GetOptions{})
		return err == nil && len(mirror.Spec.Drivers) == 2, err
	})
}

// deleteVolumeWorkload deletes the pod with the volume and its objects and
// waits until none of their copies is left.
func deleteVolumeWorkload(t *testing.T) {
	ctx, s := t.Context(), world
	_, err := s.Virtual.Kubectl(ctx, "delete", "-f", "testdata/storage-pod.yaml", "--wait=true", "--timeout=2m")
	step(t, "delete the pod with the volume", err)
	_, err = s.Virtual.Kubectl(ctx, "delete", "-f", "testdata/storage-virtual.yaml", "--wait=true", "--timeout=2m")
	step(t, "delete the volume", err)
	waitFor(t, "no copy of the volume is left in the physical cluster", func(ctx context.Context) (string, error) {
		left, err := leftovers(ctx, "PVCs", "PVs", "CSI Secret")
		return strings.Join(left, ", "), err
	})
}

// checkUnbound checks what unbinding leaves: no virtual node, nothing of
// Kubeocean's in the physical cluster, no mark on the virtual objects.
func checkUnbound(t *testing.T) {
	ctx, s := t.Context(), world
	nodes, err := s.VirtualKube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelClusterID + "=" + stack.ClusterID})
	step(t, "list virtual nodes", err)
	if len(nodes.Items) != 0 {
		t.Errorf("%d virtual nodes left after unbinding", len(nodes.Items))
	}
	left, err := leftovers(ctx)
	step(t, "list physical leftovers", err)
	if len(left) > 0 {
		t.Errorf("left in the physical cluster after unbinding: %s", strings.Join(left, ", "))
	}
	configMap, err := s.VirtualKube.CoreV1().ConfigMaps(stack.AppNamespace).Get(ctx, "web-config", metav1.GetOptions{})
	step(t, "get virtual ConfigMap", err)
	secret, err := s.VirtualKube.CoreV1().Secrets(stack.AppNamespace).Get(ctx, "web-credentials", metav1.GetOptions{})
	step(t, "get virtual Secret", err)
	for _, obj := range []metav1.Object{configMap, secret} {
		if _, marked := obj.GetLabels()[kubeoceanv1alpha1.SyncedByLabel(stack.ClusterID)]; marked || len(obj.GetFinalizers()) > 0 {
			t.Errorf("virtual %s still marked after unbinding: labels %v, finalizers %v", obj.GetName(), obj.GetLabels(), obj.GetFinalizers())
		}
	}
	policy, err := s.PhysicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Get(ctx, stack.BindingName, metav1.GetOptions{})
	step(t, "get policy", err)
	if len(policy.Finalizers) > 0 {
		t.Errorf("policy keeps finalizers %v after unbinding", policy.Finalizers)
	}
}

func waitFor(t *testing.T, what string, check func(context.Context) (string, error)) {
	t.Helper()
	step(t, what, stack.Poll(waitCtx(t), what, check))
}

// waitCopy waits until done reports true.
func waitCopy(t *testing.T, what string, done func(context.Context) (bool, error)) {
	t.Helper()
	waitFor(t, what+" reaches the other cluster", func(ctx context.Context) (string, error) {
		ok, err := done(ctx)
		if err != nil || ok {
			return "", err
		}
		return "not yet", nil
	})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// leftovers lists what of Kubeocean's is in the physical cluster, of the
// given kinds or (none given) of every kind.
func leftovers(ctx context.Context, kinds ...string) ([]string, error) {
	core := world.PhysicalKube.CoreV1()
	managed := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean}
	counts := map[string]func() (int, error){
		"pods": func() (int, error) {
			l, err := core.Pods(stack.MountNamespace).List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"ConfigMaps": func() (int, error) {
			l, err := core.ConfigMaps(stack.MountNamespace).List(ctx, managed)
			return len(l.Items), err
		},
		"Secrets": func() (int, error) {
			l, err := core.Secrets(stack.MountNamespace).List(ctx, managed)
			return len(l.Items), err
		},
		"PVCs": func() (int, error) {
			l, err := core.PersistentVolumeClaims(stack.MountNamespace).List(ctx, metav1.ListOptions{})
			return len(l.Items), err
		},
		"PVs": func() (int, error) {
			l, err := core.PersistentVolumes().List(ctx, managed)
			return len(l.Items), err
		},
		"CSI Secret": func() (int, error) {
			_, err := core.Secrets(storageNamespace).Get(ctx, "disk-creds", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return 0, nil
			}
			return 1, err
		},
	}
	if len(kinds) == 0 {
		for kind := range counts {
			kinds = append(kinds, kind)
		}
	}
	var left []string
	for _, kind := range kinds {
		n, err := counts[kind]()
		if err != nil {
			return nil, err
		}
		if n > 0 {
			left = append(left, fmt.Sprintf("%d %s", n, kind))
		}
	}
	slices.Sort(left)
	return left, nil
}

// rotateKubeconfig replaces the binding's kubeconfig with one holding a
// fresh bound token, as an operator rotating credentials does, and, with a
// syncer Deployment, waits until the manager rolls the new hash out to it.
func rotateKubeconfig(t *testing.T, deployment bool) {
	ctx, s := t.Context(), world
	deployments := s.VirtualKube.AppsV1().Deployments(stack.SystemNamespace)
	name := syncertemplate.ObjectName(stack.BindingName)
	var before *appsv1.Deployment
	if deployment {
		var err error
		before, err = deployments.Get(ctx, name, metav1.GetOptions{})
		step(t, "get syncer Deployment", err)
	}
	token, err := s.Physical.Kubectl(ctx, "-n", stack.MountNamespace, "create", "token", stack.SyncerAccount, "--duration=1h")
	step(t, "create a token", err)
	secrets := s.VirtualKube.CoreV1().Secrets(stack.SystemNamespace)
	secret, err := secrets.Get(ctx, stack.KubeconfigSecret, metav1.GetOptions{})
	step(t, "get kubeconfig Secret", err)
	secret.Data["kubeconfig"] = s.Physical.KubeconfigForToken(strings.TrimSpace(token))
	_, err = secrets.Update(ctx, secret, metav1.UpdateOptions{})
	step(t, "rotate the kubeconfig", err)
	if !deployment {
		return
	}
	hashKey := "kubeocean.io/kubeconfig-hash"
	old := before.Spec.Template.Annotations[hashKey]
	waitCopy(t, "the new kubeconfig hash", func(ctx context.Context) (bool, error) {
		after, err := deployments.Get(ctx, name, metav1.GetOptions{})
		return err == nil && after.Spec.Template.Annotations[hashKey] != old, err
	})
}

// waitLeaseRenewed waits until the syncer renews the Lease of a virtual
// node (about every 10 s).
func waitLeaseRenewed(t *testing.T, physical string) {
	ctx, s := t.Context(), world
	leases := s.VirtualKube.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	name := "vnode-" + stack.ClusterID + "-" + physical
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	step(t, "get node Lease", err)
	first := lease.Spec.RenewTime
	waitCopy(t, "a renewal of Lease "+name, func(ctx context.Context) (bool, error) {
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		return err == nil && lease.Spec.RenewTime != nil && first != nil && lease.Spec.RenewTime.After(first.Time), err
	})
}
