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

package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const eventually = 60 * time.Second

// TestTwoClusters runs the shape the end-to-end tests use: a virtual cluster
// with controller-manager and scheduler next to a physical one with kwok.
func TestTwoClusters(t *testing.T) {
	clusters := StartParallelT(t,
		Options{Name: "virtual", ControllerManager: true, Scheduler: true},
		Options{Name: "physical", Kwok: true},
	)
	virtual, physical := clusters[0], clusters[1]
	if virtual.URL == physical.URL {
		t.Fatalf("both clusters serve on %s", virtual.URL)
	}

	t.Run("independent", func(t *testing.T) { testIndependent(t, virtual, physical) })
	t.Run("admin kubeconfig", func(t *testing.T) { testAdminKubeconfig(t, virtual) })
	t.Run("controller-manager", func(t *testing.T) { testControllerManager(t, virtual) })
	t.Run("scheduler", func(t *testing.T) { testScheduler(t, virtual) })
	t.Run("kwok", func(t *testing.T) { testKwok(t, physical) })
	t.Run("service account", func(t *testing.T) { testServiceAccount(t, physical) })
	t.Run("stop", func(t *testing.T) { testStop(t, virtual, physical) })
}

func testIndependent(t *testing.T, virtual, physical *Cluster) {
	ctx := t.Context()
	createNamespace(t, virtual.Clientset(), "only-in-virtual")
	_, err := physical.Clientset().CoreV1().Namespaces().Get(ctx, "only-in-virtual", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("namespace created in virtual, get from physical: want NotFound, got %v", err)
	}
}

func testAdminKubeconfig(t *testing.T, c *Cluster) {
	cfg, err := clientcmd.BuildConfigFromFlags("", c.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.CAData) == 0 && !cfg.Insecure {
		t.Fatal("kubeconfig has neither a CA nor insecure-skip-tls-verify")
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatalf("admin kubeconfig: %v", err)
	}
}

func testControllerManager(t *testing.T, c *Cluster) {
	client := c.Clientset()
	createNamespace(t, client, "gets-default-sa")
	waitFor(t, "default ServiceAccount in a new namespace", func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().ServiceAccounts("gets-default-sa").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
}

// testScheduler shows the scheduler at work without any node: it marks the
// pod unschedulable rather than leaving it untouched.
func testScheduler(t *testing.T, c *Cluster) {
	client := c.Clientset()
	pod := testPod("unschedulable", "")
	if _, err := client.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod marked unschedulable", func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "unschedulable", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return hasCondition(pod.Status.Conditions, corev1.PodScheduled, corev1.ConditionFalse), nil
	})
}

func testKwok(t *testing.T, c *Cluster) {
	client := c.Clientset()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        "kwok-node-0",
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		Labels: map[string]string{
			"kubernetes.io/arch":     "amd64",
			"kubernetes.io/os":       "linux",
			"kubernetes.io/hostname": "kwok-node-0",
			"type":                   "kwok",
		},
	}}
	if _, err := client.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node Ready", func(ctx context.Context) (bool, error) {
		node, err := client.CoreV1().Nodes().Get(ctx, "kwok-node-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})

	// Without a node Lease the node lifecycle controller would mark the node
	// NotReady again after its grace period.
	waitFor(t, "node Lease", func(ctx context.Context) (bool, error) {
		_, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "kwok-node-0", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})

	if _, err := client.CoreV1().Pods("default").Create(t.Context(), testPod("on-kwok", "kwok-node-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod Running", func(ctx context.Context) (bool, error) {
		pod, err := client.CoreV1().Pods("default").Get(ctx, "on-kwok", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodRunning, nil
	})
}

// testServiceAccount checks that a ServiceAccount token authenticates as
// that account and gets nothing RBAC does not grant.
func testServiceAccount(t *testing.T, c *Cluster) {
	ctx := t.Context()
	data, err := c.KubeconfigForServiceAccount(ctx, "default", "limited")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:default:limited"; review.Status.UserInfo.Username != want {
		t.Errorf("user = %q, want %q", review.Status.UserInfo.Username, want)
	}
	_, err = client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("listing pods without a role: want Forbidden, got %v", err)
	}
}

func testStop(t *testing.T, clusters ...*Cluster) {
	var pids []int
	for _, c := range clusters {
		for _, p := range c.procs {
			pids = append(pids, p.cmd.Process.Pid)
		}
	}
	// Stop must be idempotent and safe to call concurrently.
	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(c.Stop)
		wg.Go(c.Stop)
	}
	wg.Wait()

	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d after Stop: signal 0 gave %v, want ESRCH", pid, err)
		}
	}
	if os.Getenv(EnvKeepTestDir) == "1" {
		return
	}
	for _, c := range clusters {
		if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
			t.Errorf("folder %s after Stop: %v, want it gone", c.Dir, err)
		}
	}
}

// TestFailedStartCleansUp starts an apiserver that rejects its flags: Start
// must fail with the reason and leave no process or folder behind.
func TestFailedStartCleansUp(t *testing.T) {
	name := fmt.Sprintf("broken-%d", os.Getpid()) // other test processes may run this too
	before := clusterDirs(t, name)
	_, err := Start(t.Context(), Options{Name: name, ExtraAPIServerFlags: []string{"--no-such-flag"}})
	if err == nil {
		t.Fatal("Start succeeded with an unknown apiserver flag")
	}
	t.Logf("Start failed as expected: %v", err)
	if !strings.Contains(err.Error(), "no-such-flag") {
		t.Errorf("error does not show the apiserver's complaint: %v", err)
	}
	registryMu.Lock()
	running := len(registry)
	registryMu.Unlock()
	if running != 0 {
		t.Errorf("%d clusters still registered after a failed start", running)
	}
	if os.Getenv(EnvKeepTestDir) != "1" {
		if after := clusterDirs(t, name); len(after) != len(before) {
			t.Errorf("folders before %v, after %v", before, after)
		}
	}
}

func clusterDirs(t *testing.T, name string) []string {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), "kubeocean-"+name+"-*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func createNamespace(t *testing.T, client kubernetes.Interface, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func testPod(name, nodeName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:   nodeName,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

func waitFor(t *testing.T, what string, condition wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, eventually, true, condition); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func hasCondition(conditions []corev1.PodCondition, typ corev1.PodConditionType, status corev1.ConditionStatus) bool {
	for _, c := range conditions {
		if c.Type == typ && c.Status == status {
			return true
		}
	}
	return false
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
