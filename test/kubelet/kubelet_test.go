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

package kubelet

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/syncer"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	binding   = "kubelet"
	clusterID = "kb"
	physNode  = "kubelet-node"
)

// lend starts a syncer with the kubelet API and lends it one kwok node; it
// returns the virtual node's name and the URL of its kubelet API.
func lend(t *testing.T) (*testenv.SyncerWorld, string, string) {
	t.Helper()
	first, err := kwokkubelet.FreePortRange(3)
	if err != nil {
		t.Fatal(err)
	}
	address := nodeIP
	kubelet := syncer.NewKubeletOptions()
	kubelet.Address, kubelet.BindAddress = address, address
	kubelet.PortRange = fmt.Sprintf("%d-%d", first, first+2)
	w := testenv.StartSyncer(t, virtualCluster, physicalCluster, binding, clusterID,
		syncer.Options{Workers: 2, PodWorkers: 4, PhysicalQPS: 100, PhysicalBurst: 200, Kubelet: kubelet})
	w.LendNode(t, testenv.KwokNode(physNode, "16", "64Gi", map[string]string{"suite": binding}))
	vnode := w.VirtualNode(physNode)
	var port int
	testenv.WaitFor(t, 60*time.Second, vnode+" advertises the syncer's kubelet API", func(ctx context.Context) (bool, error) {
		n, err := w.Virtual.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		port = int(n.Status.DaemonEndpoints.KubeletEndpoint.Port)
		ok := port >= first && port <= first+2 && len(n.Status.Addresses) == 1 && n.Status.Addresses[0].Address == address &&
			n.Annotations[kubeoceanv1alpha1.AnnotationKubeletPort] == strconv.Itoa(port)
		return ok, fmt.Errorf("addresses %v, port %d", n.Status.Addresses, port)
	})
	return w, vnode, "https://" + net.JoinHostPort(address, strconv.Itoa(port))
}

// runPod creates a pod on the virtual node and waits until it runs in the
// physical cluster.
func runPod(t *testing.T, w *testenv.SyncerWorld, ns, name, node string, mutate func(*corev1.Pod)) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	if mutate != nil {
		mutate(pod)
	}
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		return
	}
	testenv.WaitFor(t, 60*time.Second, ns+"/"+name+" runs", func(ctx context.Context) (bool, error) {
		p, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Status.Phase == corev1.PodRunning && p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] != "", fmt.Errorf("phase %s", p.Status.Phase)
	})
}

// kubectl runs kubectl on the virtual cluster with stdin and returns its
// output and exit code.
func kubectl(ctx context.Context, kubeconfig, stdin string, args ...string) (string, int, error) {
	path, err := controlplane.KubectlPath()
	if err != nil {
		return "", 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String() + stderr.String(), exit.ExitCode(), nil
	}
	return out.String() + stderr.String(), 0, err
}

func TestKubeletAPI(t *testing.T) {
	w, vnode, kubeletURL := lend(t)
	ctx := t.Context()
	for _, ns := range []string{"team-a", "team-b"} {
		testenv.CreateNamespace(t, w.Virtual, ns)
		testenv.WaitFor(t, 30*time.Second, "the default ServiceAccount in "+ns, func(ctx context.Context) (bool, error) {
			_, err := w.Virtual.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, err
		})
		runPod(t, w, ns, "web", vnode, nil)
	}
	admin := virtualCluster.KubeconfigPath

	t.Run("logs", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
			not  []string
		}{
			{[]string{"logs", "-n", "team-a", "web"}, logLines, nil},
			{[]string{"logs", "-n", "team-a", "web", "-c", "app", "--tail=1"}, logLines[2:], logLines[:2]},
			{[]string{"logs", "-n", "team-a", "web", "--timestamps"}, []string{"2026-01-01T00:00:02.000000000Z third line"}, nil},
			{[]string{"logs", "-n", "team-a", "web", "--previous"}, logLines, nil},
		} {
			out, code, err := kubectl(ctx, admin, "", tc.args...)
			if err != nil || code != 0 {
				t.Fatalf("kubectl %v: %d %v: %s", tc.args, code, err, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("kubectl %v: %q missing in %q", tc.args, want, out)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(out, not) {
					t.Errorf("kubectl %v: %q unexpected in %q", tc.args, not, out)
				}
			}
		}
		t.Logf("kubectl logs -n team-a web:\n%s", mustKubectl(t, admin, "logs", "-n", "team-a", "web"))
	})

	t.Run("logs -f ends with the client", func(t *testing.T) {
		cancel, wait := streamUntil(t, admin, logLines[2], "logs", "-f", "-n", "team-a", "web")
		if followers := logGoroutines(); followers == 0 {
			t.Error("no log stream is being served during the follow")
		}
		cancel()
		wait()
		testenv.WaitFor(t, 30*time.Second, "the log stream is closed once kubectl is gone", func(context.Context) (bool, error) {
			n := logGoroutines()
			return n == 0, fmt.Errorf("%d goroutines still serve or read logs", n)
		})
	})

	t.Run("exec", func(t *testing.T) {
		// kwok wraps a command's exit error, so its kubelet API reports a
		// failed command as an internal error carrying "exit status 3"
		// instead of a status with the exit code: compare with an exec
		// straight into the physical pod, which must look the same.
		command := []string{"--", "sh", "-c", "echo hello from $0; exit 3"}
		out, code, err := kubectl(ctx, admin, "", append([]string{"exec", "-n", "team-a", "web", "-c", "app"}, command...)...)
		physicalPod := physicalName(t, w, "team-a", "web")
		direct, directCode, directErr := kubectl(ctx, physicalCluster.KubeconfigPath, "", append([]string{"exec", "-n", w.Mount, physicalPod, "-c", "app"}, command...)...)
		if err != nil || directErr != nil || code != directCode || !strings.Contains(out, "hello from sh") || !strings.Contains(out, "exit status 3") {
			t.Fatalf("exec: code %d, %v, %q; straight into the physical pod: code %d, %v, %q", code, err, out, directCode, directErr, direct)
		}
		t.Logf("kubectl exec -n team-a web -- sh -c 'echo hello from $0; exit 3' → exit %d:\n%s", code, out)
		out, code, err = kubectl(ctx, admin, "", "exec", "-n", "team-a", "web", "--", "sh", "-c", "echo ok")
		if err != nil || code != 0 || out != "ok\n" {
			t.Fatalf("exec echo ok: code %d, %v, %q", code, err, out)
		}
		// read, not cat: the command must end without waiting for stdin
		// to close (kwok keeps a local command's stdin open).
		out, code, err = kubectl(ctx, admin, "ping through stdin\n", "exec", "-i", "-n", "team-a", "web", "--", "sh", "-c", "read line; echo got $line")
		if err != nil || code != 0 || out != "got ping through stdin\n" {
			t.Fatalf("exec -i: code %d, %v, %q", code, err, out)
		}
	})

	// kwok's attach streams nothing for a pod without stdin: the check is
	// that the session is set up through the syncer, as it is straight
	// into the physical pod, and stays up until the client leaves.
	t.Run("attach", func(t *testing.T) {
		for _, kubeconfig := range []string{admin, physicalCluster.KubeconfigPath} {
			ns, pod := "team-a", "web"
			if kubeconfig != admin {
				ns, pod = w.Mount, physicalName(t, w, "team-a", "web")
			}
			attachCtx, cancel := context.WithTimeout(ctx, 3*time.Second)
			path, _ := controlplane.KubectlPath()
			out, err := exec.CommandContext(attachCtx, path, "--kubeconfig="+kubeconfig, "attach", "-n", ns, pod, "-c", "app").CombinedOutput()
			cancel()
			if attachCtx.Err() == nil || !strings.Contains(string(out), "If you don't see a command prompt") || strings.Contains(string(out), "error") {
				t.Errorf("attach to %s/%s: %v: %s; want a session that lasts until kubectl is stopped", ns, pod, err, out)
			}
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		local, err := kwokkubelet.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		pfCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		path, _ := controlplane.KubectlPath()
		cmd := exec.CommandContext(pfCtx, path, "--kubeconfig="+admin, "port-forward", "-n", "team-a", "pod/web", fmt.Sprintf("%d:8080", local))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		var conn net.Conn
		testenv.WaitFor(t, 20*time.Second, "port-forward listens", func(context.Context) (bool, error) {
			conn, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", local))
			return err == nil, err
		})
		defer func() { _ = conn.Close() }()
		payload := bytes.Repeat([]byte("kubeocean"), 1000)
		if _, err := conn.Write(payload); err != nil {
			t.Fatal(err)
		}
		echo := make([]byte, len(payload))
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.ReadFull(conn, echo); err != nil || !bytes.Equal(echo, payload) {
			t.Fatalf("echo through port-forward: %v (kubectl: %s)", err, out.String())
		}
	})

	t.Run("refused requests never reach the physical cluster", func(t *testing.T) {
		before := physicalLogRequests(t)
		url := kubeletURL + "/containerLogs/team-a/web/app"
		if code, body := direct(t, url, ""); code != http.StatusUnauthorized {
			t.Errorf("no credentials: %d %s, want 401", code, body)
		}
		// A ServiceAccount allowed pods/log in team-a only: the virtual
		// apiserver refuses team-b itself, and the syncer refuses the
		// account direct access (it may not proxy to nodes).
		reader := logReader(t, w, "team-a")
		if out, code, _ := kubectl(ctx, reader, "", "logs", "-n", "team-a", "web"); code != 0 || !strings.Contains(out, logLines[0]) {
			t.Errorf("reader in team-a: %d %s", code, out)
		}
		if out, code, _ := kubectl(ctx, reader, "", "logs", "-n", "team-b", "web"); code == 0 || !strings.Contains(out, "forbidden") {
			t.Errorf("reader in team-b: %d %s, want forbidden", code, out)
		}
		token, err := virtualCluster.ServiceAccountToken(ctx, "team-a", "log-reader")
		if err != nil {
			t.Fatal(err)
		}
		if code, body := direct(t, url, token); code != http.StatusForbidden || !strings.Contains(body, "subresource=proxy") {
			t.Errorf("reader directly: %d %s, want 403 on nodes/proxy", code, body)
		}
		// Pods the syncer does not serve: on another node (which it does
		// not even cache), not created in the physical cluster yet, or a
		// container the pod does not have.
		runPod(t, w, "team-a", "elsewhere", "some-other-node", func(p *corev1.Pod) {})
		runPod(t, w, "team-a", "waiting", vnode, func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "does-not-exist"}}}}}
		})
		adminToken := virtualCluster.Config().BearerToken
		for path, want := range map[string]string{
			"team-a/elsewhere/app": "not found on node " + vnode,
			"team-a/waiting/app":   "has not been created in the physical cluster yet",
			"team-a/web/db":        "container db is not valid",
			"team-a/ghost/app":     "not found",
		} {
			url := kubeletURL + "/containerLogs/" + path
			if code, body := direct(t, url, adminToken); code != http.StatusNotFound || !strings.Contains(body, want) {
				t.Errorf("%s: %d %q, want 404 %q", path, code, body, want)
			}
		}
		if out, code, _ := kubectl(ctx, admin, "", "logs", "-n", "team-a", "web", "-c", "db"); code == 0 || !strings.Contains(out, "container db is not valid") {
			t.Errorf("kubectl logs -c db: %d %s", code, out)
		}
		// Only the reader's allowed kubectl logs reached the physical cluster.
		if after := physicalLogRequests(t); after != before+1 {
			t.Errorf("physical pods/log requests went from %d to %d, want one more (the allowed read)", before, after)
		}
	})

	t.Run("metrics/resource through the virtual apiserver", func(t *testing.T) {
		if strings.Contains(kubeletURL, "127.0.0.1") {
			t.Skip("the apiserver does not proxy nodes/proxy to loopback addresses, and the host has no other")
		}
		// kwok registers a node's pods on its first scrape and reports them
		// from the next one on.
		var out string
		testenv.WaitFor(t, 30*time.Second, "pod series in the virtual node's metrics", func(ctx context.Context) (bool, error) {
			out = mustKubectl(t, admin, "get", "--raw", "/api/v1/nodes/"+vnode+"/proxy/metrics/resource")
			return strings.Contains(out, "pod_cpu_usage_seconds_total{"), nil
		})
		for _, want := range []string{`namespace="team-a",pod="web"`, `namespace="team-b",pod="web"`, "node_cpu_usage_seconds_total"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s missing in\n%s", want, out)
			}
		}
		if strings.Contains(out, w.Mount) {
			t.Errorf("physical names leak:\n%s", out)
		}
		if t.Failed() {
			t.Logf("the physical node's:\n%s", mustKubectl(t, physicalCluster.KubeconfigPath, "get", "--raw", "/api/v1/nodes/"+physNode+"/proxy/metrics/resource"))
		}
		t.Logf("kubectl get --raw /api/v1/nodes/%s/proxy/metrics/resource:\n%s", vnode, out)
	})

	t.Run("healthz through the virtual apiserver", func(t *testing.T) {
		if strings.Contains(kubeletURL, "127.0.0.1") {
			t.Skip("the apiserver does not proxy nodes/proxy to loopback addresses, and the host has no other")
		}
		if out := mustKubectl(t, admin, "get", "--raw", "/api/v1/nodes/"+vnode+"/proxy/healthz"); out != "ok" {
			t.Errorf("healthz: %q", out)
		}
	})

	// Last, since it stops the syncer: an open exec session does not
	// outlive the syncer's kubelet API, which closes its streams (and the
	// physical connections behind them) before it returns.
	t.Run("streams end with the syncer", func(t *testing.T) {
		_, wait := streamUntil(t, admin, "ready", "exec", "-i", "-n", "team-a", "web", "--", "sh", "-c", "echo ready; sleep 60")
		if n := streamGoroutines(); n == 0 {
			t.Fatal("no stream is being served during the exec")
		}
		w.StopSyncer()
		if n := streamGoroutines(); n != 0 {
			t.Errorf("%d goroutines still serve a stream once the syncer has stopped", n)
		}
		ended := make(chan struct{})
		go func() { wait(); close(ended) }()
		select {
		case <-ended:
		case <-time.After(15 * time.Second):
			t.Error("kubectl exec still runs 15 s after the syncer stopped")
		}
	})
}

// streamGoroutines counts goroutines proxying an exec, attach or
// port-forward stream in this process (the syncer runs in the test
// binary).
func streamGoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	return strings.Count(buf.String(), "kubeletapi.(*streamProxy).serve")
}

// streamUntil runs a kubectl that streams until it is stopped, and reads
// its output until want shows; it returns how to stop it and wait for it.
func streamUntil(t *testing.T, kubeconfig, want string, args ...string) (cancel func(), wait func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	path, _ := controlplane.KubectlPath()
	cmd := exec.CommandContext(ctx, path, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	var got string
	for !strings.Contains(got, want) {
		n, err := stdout.Read(buf)
		if err != nil {
			cancel()
			_ = cmd.Wait()
			t.Fatalf("kubectl %v: %v (got %q, stderr %q)", args, err, got, stderr.String())
		}
		got += string(buf[:n])
	}
	return cancel, func() { _ = cmd.Wait() }
}

func physicalName(t *testing.T, w *testenv.SyncerWorld, ns, name string) string {
	t.Helper()
	p, err := w.Virtual.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName]
}

func mustKubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, code, err := kubectl(t.Context(), kubeconfig, "", args...)
	if err != nil || code != 0 {
		t.Fatalf("kubectl %v: %d %v: %s", args, code, err, out)
	}
	return out
}

// logGoroutines counts goroutines serving a log request in this process
// (the syncer runs in the test binary).
func logGoroutines() int {
	var buf bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&buf, 2)
	return strings.Count(buf.String(), "kubeletapi.(*nodeServer).serveLogs")
}

// direct calls the syncer's kubelet API with an optional bearer token.
func direct(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test certificate
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// logReader makes ServiceAccount team-a/log-reader, allowed to read pods
// and their logs in ns only, and returns its kubeconfig file.
func logReader(t *testing.T, w *testenv.SyncerWorld, ns string) string {
	t.Helper()
	ctx := t.Context()
	if _, err := w.Virtual.CoreV1().ServiceAccounts("team-a").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "log-reader"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "log-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/log"}, Verbs: []string{"get"}}},
	}
	if _, err := w.Virtual.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "log-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "log-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "log-reader", Namespace: "team-a"}},
	}
	if _, err := w.Virtual.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data, err := virtualCluster.KubeconfigForServiceAccount(ctx, "team-a", "log-reader")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/reader.kubeconfig"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// physicalLogRequests is the physical apiserver's count of pods/log
// requests, from its own metrics.
func physicalLogRequests(t *testing.T) int {
	t.Helper()
	requests, err := benchenv.ScrapeAPIServer(t.Context(), physicalCluster)
	if err != nil {
		t.Fatal(err)
	}
	return int(requests.Total(func(r benchenv.APIRequest) bool { return r.Resource == "pods/log" }))
}
