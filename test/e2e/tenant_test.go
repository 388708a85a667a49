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
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// tenantNode is the virtual node the tenants' pods are bound to.
var tenantNode = "vnode-" + stack.ClusterID + "-" + metricsNode

// startTenantWorld starts the stack with Kubeocean deployed from the
// shipped manifests (in-process mode: one manager, as its ServiceAccount),
// with or without manifests/admission, and one Ready virtual node.
func startTenantWorld(t *testing.T, admission bool) *stack.Stack {
	s := startWorld(t)
	ctx := t.Context()
	step(t, "install CRDs", s.InstallCRDs(ctx))
	step(t, "install RBAC", s.InstallRBAC(ctx, "in-process"))
	if admission {
		step(t, "install the admission policy", s.InstallAdmission(waitCtx(t)))
	}
	step(t, "create physical node", s.CreateNodes(ctx, []string{metricsNode}, map[string]string{stack.LendableLabel: "true"}))
	physicalKubeconfig, err := s.PhysicalSyncerKubeconfig(waitCtx(t))
	step(t, "physical kubeconfig", err)
	step(t, "bind", s.Bind(ctx, physicalKubeconfig))
	startManager(t, append(managerDeploymentArgs(t, "in-process"), kubeletPortRange(t))...)
	step(t, "virtual node Ready", s.WaitVirtualNodesReady(waitCtx(t), 1))
	return s
}

// tenantRules are what a tenant of team-a holds on pods in its namespace:
// run them, exec into them and read their logs, and (with edit) change
// them; no more.
func tenantRules(edit bool) []rbacv1.PolicyRule {
	verbs := []string{"get", "list", "create"}
	if edit {
		verbs = append(verbs, "update", "patch")
	}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: verbs},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	}
}

// tenantKubeconfig creates namespace with a ServiceAccount "tenant" bound
// to rules there, and returns the path of a kubeconfig of its token.
func tenantKubeconfig(t *testing.T, namespace string, rules []rbacv1.PolicyRule) string {
	ctx, s := t.Context(), world
	tenantNamespace(t, namespace)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}, Rules: rules}
	_, err := s.VirtualKube.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{})
	step(t, "create Role tenant in "+namespace, err)
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "tenant"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "tenant"}},
	}
	_, err = s.VirtualKube.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{})
	step(t, "create RoleBinding tenant in "+namespace, err)
	kubeconfig, err := s.Virtual.KubeconfigForServiceAccount(ctx, namespace, "tenant")
	step(t, "kubeconfig of "+namespace+"/tenant", err)
	path := filepath.Join(t.TempDir(), namespace+"-tenant.kubeconfig")
	step(t, "write the tenant's kubeconfig", os.WriteFile(path, kubeconfig, 0o600))
	return path
}

// tenantNamespace creates namespace and waits for its default
// ServiceAccount, which pods run as and the controller-manager creates a
// moment after the namespace.
func tenantNamespace(t *testing.T, namespace string) {
	testenv.CreateNamespace(t, world.VirtualKube, namespace)
	waitFor(t, "ServiceAccount "+namespace+"/default exists", func(ctx context.Context) (string, error) {
		if _, err := world.VirtualKube.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
}

// tenantPod is a pod bound to tenantNode, with annotations.
func tenantPod(namespace, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": name}, Annotations: annotations},
		Spec: corev1.PodSpec{
			NodeName:                      tenantNode,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Tolerations:                   []corev1.Toleration{{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists}},
			Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// applyAs writes pod as YAML and runs kubectl apply with kubeconfig.
func applyAs(t *testing.T, kubeconfig string, pod *corev1.Pod) (string, error) {
	data, err := yaml.Marshal(pod)
	step(t, "marshal pod "+pod.Name, err)
	path := filepath.Join(t.TempDir(), pod.Name+".yaml")
	step(t, "write pod "+pod.Name, os.WriteFile(path, data, 0o600))
	return world.Virtual.KubectlAs(t.Context(), kubeconfig, "apply", "-f", path)
}

// waitMapped waits until the syncer has recorded the physical pod of
// namespace/name on it (name and namespace with an update of the pod, the
// UID with one of its status) and the physical pod runs, and returns the
// virtual pod.
func waitMapped(t *testing.T, namespace, name string) *corev1.Pod {
	var pod *corev1.Pod
	waitFor(t, "the syncer maps "+namespace+"/"+name+" and its physical pod runs", func(ctx context.Context) (string, error) {
		var err error
		pod, err = world.VirtualKube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if pod.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodUID] == "" || pod.Status.Phase != corev1.PodRunning {
			return "phase " + string(pod.Status.Phase) + ", annotations " + yamlOf(pod.Annotations), nil
		}
		return "", nil
	})
	return pod
}

func yamlOf(v any) string {
	data, _ := yaml.Marshal(v)
	return string(data)
}
