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
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestKubeoceanCLI binds the physical cluster with the built kubeocean
// command, from nothing but the two admin kubeconfigs: the binding becomes
// Ready and lends the selected node; binding again changes nothing; the
// binding's identity has only its rights; binding again leaves what an
// administrator hardened, and --dry-run shows it as a diff; a rotated
// credential is revoked; another binding cannot take the mount namespace;
// status shows the binding; unbind removes it.
func TestKubeoceanCLI(t *testing.T) {
	const name, node, mountNamespace = "cli-bind", "cli-bind-node", "kubeocean-cli-bind"
	w := newWorld(t)
	ctx := t.Context()
	binary := filepath.Join(t.TempDir(), "kubeocean")
	if out, err := exec.Command("go", "build", "-o", binary, "../../cmd/kubeocean").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var run runCLI = func(args ...string) (string, error) {
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, binary, append([]string{"--kubeconfig=" + virtualCluster.KubeconfigPath}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	bind := []string{"bind", name, "--physical-kubeconfig=" + physicalCluster.KubeconfigPath, "--node-selector=suite=" + name, "--policy", "--wait=90s"}
	if _, err := w.physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(node, "4", "8Gi", map[string]string{"suite": name}), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = w.virtual.CoreV1().Secrets(systemNamespace).Delete(context.Background(), name+"-kubeconfig", metav1.DeleteOptions{})
		resetMountNamespace(t, w, mountNamespace)
	})

	out, err := run(append(bind, "--dry-run")...)
	if err != nil || !strings.Contains(out, "+kind: ClusterBinding") || !strings.Contains(out, "kubeconfig: <redacted>") ||
		!strings.Contains(out, "Namespace "+mountNamespace+" would be created") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if _, err := w.binding(ctx, name); !apierrors.IsNotFound(err) {
		t.Fatalf("the dry run created the binding (err %v)", err)
	}

	startManager(t, func(_ *app.Options, o *manager.Options) { o.SyncerMode = manager.ModeInProcess })
	t.Cleanup(func() { w.deleteBinding(t, name, 90*time.Second) })
	out, err = run(bind...)
	if err != nil || !strings.Contains(out, "ClusterBinding "+name+" is Ready") {
		t.Fatalf("bind: %v\n%s", err, out)
	}
	vnode := kubeoceanv1alpha1.VirtualNodeName(name, node)
	waitFor(t, 60*time.Second, "virtual node "+vnode, func(ctx context.Context) (bool, error) {
		_, err := w.virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{})
		return err == nil, err
	})

	secret, err := w.virtual.CoreV1().Secrets(systemNamespace).Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err = run(bind...)
	if err != nil || strings.Contains(out, " created") || strings.Contains(out, "differs") || !strings.Contains(out, "Namespace "+mountNamespace+" unchanged") {
		t.Fatalf("bind again did more than find everything unchanged: %v\n%s", err, out)
	}
	again, err := w.virtual.CoreV1().Secrets(systemNamespace).Get(ctx, name+"-kubeconfig", metav1.GetOptions{})
	if err != nil || again.ResourceVersion != secret.ResourceVersion {
		t.Fatalf("binding again rewrote the kubeconfig Secret (%v)", err)
	}

	checkIdentity(t, w, mountNamespace)
	bindLeavesHardening(t, w, run, bind, mountNamespace)
	rotateRevokes(t, w, run, bind, name, mountNamespace)
	// A node lent after the old credential is revoked shows up: the
	// syncer reads the physical cluster with the new one.
	const later = "cli-bind-node-later"
	if _, err := w.physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(later, "4", "8Gi", map[string]string{"suite": name}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.physical.CoreV1().Nodes().Delete(context.Background(), later, metav1.DeleteOptions{}) })
	waitFor(t, 60*time.Second, "virtual node of "+later+" after the rotation", func(ctx context.Context) (bool, error) {
		_, err := w.virtual.CoreV1().Nodes().Get(ctx, kubeoceanv1alpha1.VirtualNodeName(name, later), metav1.GetOptions{})
		return err == nil, err
	})
	claimRefused(t, w, run, name, mountNamespace)

	out, err = run("status", name)
	if err != nil || !strings.Contains(oneLine(out), oneLine(name+" "+name+" Ready Ready 2 8 16Gi 0")) || !strings.Contains(out, vnode) {
		t.Fatalf("status: %v\n%s", err, out)
	}

	out, err = run("unbind", name, "--wait=90s")
	if err != nil || !strings.Contains(out, "ClusterBinding "+name+" is gone") {
		t.Fatalf("unbind: %v\n%s", err, out)
	}
	if _, err := w.virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("virtual node %s outlived the binding (err %v)", vnode, err)
	}
}

// run runs the kubeocean command and returns what it printed.
type runCLI func(args ...string) (string, error)

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// checkIdentity asks the physical cluster's authorizer what the binding's
// own identity may do, as `kubectl auth can-i --as` would.
func checkIdentity(t *testing.T, w *world, mountNamespace string) {
	t.Helper()
	const other = "cli-bind-other"
	createNamespace(t, w.physical, other)
	for _, c := range []struct {
		what    string
		attrs   authorizationv1.ResourceAttributes
		allowed bool
	}{
		{"get nodes/proxy", authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: "cli-bind-node"}, false},
		{"list secrets in another namespace", authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: other}, false},
		{"update resourceleasingpolicies", authorizationv1.ResourceAttributes{Verb: "update", Group: "kubeocean.io", Resource: "resourceleasingpolicies"}, false},
		{"create pods in its mount namespace", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: mountNamespace}, true},
		{"list secrets in its mount namespace", authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets", Namespace: mountNamespace}, true},
	} {
		review, err := w.physical.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:               "system:serviceaccount:" + mountNamespace + ":kubeocean-syncer",
				Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + mountNamespace, "system:authenticated"},
				ResourceAttributes: &c.attrs,
			}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if review.Status.Allowed != c.allowed {
			t.Errorf("the binding's identity may %s: %v, want %v (%s)", c.what, review.Status.Allowed, c.allowed, review.Status.Reason)
		}
	}
}

// bindLeavesHardening: an administrator makes the mount namespace
// restricted and removes a rule from the binding's ClusterRole; --dry-run
// shows both as a diff, and bind leaves both as they are.
func bindLeavesHardening(t *testing.T, w *world, run runCLI, bind []string, mountNamespace string) {
	t.Helper()
	ctx := t.Context()
	const enforce = "pod-security.kubernetes.io/enforce"
	patch := []byte(`{"metadata":{"labels":{"` + enforce + `":"restricted"}}}`)
	if _, err := w.physical.CoreV1().Namespaces().Patch(ctx, mountNamespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	roleName := "kubeocean-syncer:" + mountNamespace
	roles := w.physical.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, roleName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	isEvents := func(r rbacv1.PolicyRule) bool { return slices.Equal(r.Resources, []string{"events"}) }
	before := len(role.Rules)
	if role.Rules = slices.DeleteFunc(role.Rules, isEvents); len(role.Rules) != before-1 {
		t.Fatalf("no events rule in %v", role.Rules)
	}
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	out, err := run(append(bind, "--dry-run")...)
	for _, want := range []string{
		"Namespace " + mountNamespace + " differs from the shipped version, would be left as is",
		"-    " + enforce + ": restricted\n    +    " + enforce + ": baseline\n",
		"ClusterRole " + roleName + " differs from the shipped version, would be left as is",
		"+  - events\n",
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("dry run (%v) does not show %q:\n%s", err, want, out)
		}
	}

	t.Logf("bind --dry-run after the administrator's changes:\n%s", out)
	out, err = run(bind...)
	for _, want := range []string{
		"Namespace " + mountNamespace + " differs from the shipped version, left as is",
		`metadata.labels["` + enforce + `"]: shipped "baseline", here "restricted"`,
		"ClusterRole " + roleName + " differs from the shipped version, left as is",
		`rules: shipped item {"apiGroups":[""],"resources":["events"],"verbs":["create","patch"]} missing here`,
	} {
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("bind (%v) does not say %q:\n%s", err, want, out)
		}
	}
	ns, err := w.physical.CoreV1().Namespaces().Get(ctx, mountNamespace, metav1.GetOptions{})
	if err != nil || ns.Labels[enforce] != "restricted" {
		t.Errorf("bind changed the mount namespace's %s to %q (%v)", enforce, ns.Labels[enforce], err)
	}
	role, err = roles.Get(ctx, roleName, metav1.GetOptions{})
	if err != nil || slices.ContainsFunc(role.Rules, isEvents) {
		t.Fatalf("bind restored the rule the administrator removed: %v (%v)", role.Rules, err)
	}
	// The manager holds the binding to every shipped rule: the
	// administrator gives the rule back for the rest of the test.
	role.Rules = append(role.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// rotateRevokes: after --rotate-token the old credential is refused by the
// physical API server and the new one works.
func rotateRevokes(t *testing.T, w *world, run runCLI, bind []string, name, mountNamespace string) {
	t.Helper()
	ctx := t.Context()
	username := "system:serviceaccount:" + mountNamespace + ":kubeocean-syncer"
	old := syncerClient(t, w, name)
	if got, err := whoAmI(ctx, old); err != nil || got != username {
		t.Fatalf("the credential before the rotation: %q, %v", got, err)
	}
	out, err := run(append(bind, "--rotate-token")...)
	if err != nil || !strings.Contains(out, "rewritten with the new credential") || !strings.Contains(out, "physical cluster: revoked") ||
		!strings.Contains(out, "ClusterBinding "+name+" is Ready") {
		t.Fatalf("bind --rotate-token: %v\n%s", err, out)
	}
	t.Logf("bind --rotate-token:\n%s", out)
	waitFor(t, 30*time.Second, "the old credential is refused", func(ctx context.Context) (bool, error) {
		_, err := whoAmI(ctx, old)
		return apierrors.IsUnauthorized(err), err
	})
	if got, err := whoAmI(ctx, syncerClient(t, w, name)); err != nil || got != username {
		t.Fatalf("the credential after the rotation: %q, %v", got, err)
	}
	w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingReady, "", 60*time.Second)
}

// syncerClient is a client with the credential of the binding's
// kubeconfig Secret.
func syncerClient(t *testing.T, w *world, name string) kubernetes.Interface {
	t.Helper()
	secret, err := w.virtual.CoreV1().Secrets(systemNamespace).Get(t.Context(), name+"-kubeconfig", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["kubeconfig"])
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(config)
}

func whoAmI(ctx context.Context, kube kubernetes.Interface) (string, error) {
	review, err := kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// claimRefused: a second binding that names a mount namespace the first
// one claimed is refused before anything is written.
func claimRefused(t *testing.T, w *world, run runCLI, name, mountNamespace string) {
	t.Helper()
	ctx := t.Context()
	configMaps := w.physical.CoreV1().ConfigMaps(mountNamespace)
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := configMaps.Get(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{})
		return err == nil, nil
	})
	if _, err := configMaps.Get(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		// A manager that does not claim mount namespaces yet: the claim
		// is written here as the manager would, to test the CLI's check.
		t.Logf("the manager wrote no claim in %s; writing it", mountNamespace)
		kubeSystem, err := w.virtual.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		binding, err := w.binding(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		_, err = configMaps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kubeoceanv1alpha1.MountNamespaceClaim}, Data: map[string]string{
			kubeoceanv1alpha1.ClaimKeyVirtualCluster: string(kubeSystem.UID), kubeoceanv1alpha1.ClaimKeyBinding: name,
			kubeoceanv1alpha1.ClaimKeyBindingUID: string(binding.UID), kubeoceanv1alpha1.ClaimKeyClusterID: binding.Spec.ClusterID,
		}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	const second = "cli-bind-second"
	out, err := run("bind", second, "--physical-kubeconfig="+physicalCluster.KubeconfigPath, "--mount-namespace="+mountNamespace, "--wait=0")
	if err == nil || !strings.Contains(out, `the mount namespace `+mountNamespace+` belongs to the binding "`+name+`" of this virtual cluster`) ||
		!strings.Contains(out, "choose another --mount-namespace") {
		t.Fatalf("binding %s to %s: %v\n%s", second, mountNamespace, err, out)
	}
	if _, err := w.binding(ctx, second); !apierrors.IsNotFound(err) {
		t.Errorf("the refused bind created ClusterBinding %s (%v)", second, err)
	}
	if _, err := w.virtual.CoreV1().Secrets(systemNamespace).Get(ctx, second+"-kubeconfig", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused bind created its kubeconfig Secret (%v)", err)
	}
}

// resetMountNamespace undoes what the test changed in the physical
// cluster, so the next run binds from the shipped state (namespaces are
// not deleted: the physical cluster has no namespace controller).
func resetMountNamespace(t *testing.T, w *world, mountNamespace string) {
	ctx := context.Background()
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`)
	if _, err := w.physical.CoreV1().Namespaces().Patch(ctx, mountNamespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
	if err := w.physical.RbacV1().ClusterRoles().Delete(ctx, "kubeocean-syncer:"+mountNamespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Error(err)
	}
	_ = w.physical.CoreV1().ConfigMaps(mountNamespace).Delete(ctx, kubeoceanv1alpha1.MountNamespaceClaim, metav1.DeleteOptions{})
	err := w.physical.CoreV1().Secrets(mountNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelCredential})
	if err != nil {
		t.Error(err)
	}
}
