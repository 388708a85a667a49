package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/stack"
)

// metricsNode is the physical node whose /metrics/resource kwok serves.
const metricsNode = "node-a"

// podEnvArgs are a container's arguments with $(VAR) references to its
// downward-API environment expanded as the kubelet would, for a pod whose
// IP is podIP (the shipped manifests pass the pod IP to --kubelet-address).
func podEnvArgs(t *testing.T, container corev1.Container, podIP string) []string {
	t.Helper()
	values := map[string]string{}
	for _, env := range container.Env {
		switch {
		case env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "status.podIP":
			values[env.Name] = podIP
		case env.ValueFrom == nil:
			values[env.Name] = env.Value
		}
	}
	args := make([]string, 0, len(container.Args))
	for _, arg := range container.Args {
		for name, value := range values {
			arg = strings.ReplaceAll(arg, "$("+name+")", value)
		}
		if strings.Contains(arg, "$(") {
			t.Fatalf("argument %q of container %s refers to a variable its environment does not set", arg, container.Name)
		}
		args = append(args, arg)
	}
	return args
}

// kubeletPortRange is a free range of ten ports for the kubelet API of one
// run, so that it does not collide with a kubelet API of another test on
// the same machine (the shipped default is 10250-11249).
func kubeletPortRange(t *testing.T) string {
	t.Helper()
	first, err := kwokkubelet.FreePortRange(10)
	step(t, "free ports for the kubelet API", err)
	return fmt.Sprintf("--kubelet-port-range=%d-%d", first, first+9)
}

// useKubeletAPI runs what users do with the kubelet API of virtual nodes
// through the virtual apiserver, on a pod of the sample application:
// kubectl logs, exec, attach and port-forward, node metrics, and a direct
// scrape with a ServiceAccount token as metrics-server makes. It uses
// every kubelet API grant of the shipped RBAC, in both clusters.
func useKubeletAPI(t *testing.T) {
	ctx, s := t.Context(), world
	pods, err := s.VirtualKube.CoreV1().Pods(stack.AppNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + stack.AppName})
	step(t, "list the application's pods", err)
	if len(pods.Items) == 0 {
		t.Fatal("the application has no pods")
	}
	pod := pods.Items[0].Name

	out, err := s.Virtual.Kubectl(ctx, "logs", "-n", stack.AppNamespace, pod)
	step(t, "kubectl logs through the virtual cluster", err)
	for _, line := range kwokkubelet.LogLines {
		if !strings.Contains(out, line) {
			t.Errorf("kubectl logs %s: %q missing in %q", pod, line, out)
		}
	}
	out, err = s.Virtual.Kubectl(ctx, "exec", "-n", stack.AppNamespace, pod, "--", "sh", "-c", "echo hello from $0")
	step(t, "kubectl exec through the virtual cluster", err)
	if out != "hello from sh\n" {
		t.Errorf("kubectl exec %s: %q, want %q", pod, out, "hello from sh\n")
	}
	attach(t, pod)
	portForward(t, pod)
	scrapeMetrics(t)
}

// attach checks that kubectl attach sets up a session that lasts until
// kubectl is stopped (kwok streams nothing for a pod without stdin).
func attach(t *testing.T, pod string) {
	kubectl, err := controlplane.KubectlPath()
	step(t, "kubectl", err)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig="+world.Virtual.KubeconfigPath,
		"attach", "-n", stack.AppNamespace, pod).CombinedOutput()
	if ctx.Err() == nil || !strings.Contains(string(out), "If you don't see a command prompt") || strings.Contains(string(out), "error") {
		t.Errorf("kubectl attach %s: %v: %s; want a session that lasts until kubectl is stopped", pod, err, out)
	}
}

// portForward sends bytes through kubectl port-forward to the pod's port,
// which kwok forwards to an echo server, and reads them back.
func portForward(t *testing.T, pod string) {
	kubectl, err := controlplane.KubectlPath()
	step(t, "kubectl", err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	step(t, "a free port", err)
	local := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig="+world.Virtual.KubeconfigPath, "port-forward",
		"-n", stack.AppNamespace, "pod/"+pod, fmt.Sprintf("%d:%d", local, kwokkubelet.PodPort))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	step(t, "start kubectl port-forward", cmd.Start())
	defer func() { cancel(); _ = cmd.Wait() }()
	var conn net.Conn
	waitFor(t, "kubectl port-forward listens", func(context.Context) (string, error) {
		if conn, err = net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(local))); err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
	defer func() { _ = conn.Close() }()
	payload := bytes.Repeat([]byte("kubeocean"), 100)
	_, err = conn.Write(payload)
	step(t, "write through port-forward", err)
	echo := make([]byte, len(payload))
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadFull(conn, echo); err != nil || !bytes.Equal(echo, payload) {
		t.Errorf("echo through kubectl port-forward: %v (kubectl: %s)", err, out.String())
	}
}

// scrapeMetrics reads the virtual node's /metrics/resource twice: through
// the virtual apiserver (nodes/proxy), and straight from the syncer's
// kubelet API with the token of a ServiceAccount allowed nodes/metrics, as
// metrics-server does (a TokenReview, then a SubjectAccessReview); without
// credentials it is refused.
func scrapeMetrics(t *testing.T) {
	ctx, s := t.Context(), world
	vnode := "vnode-" + stack.ClusterID + "-" + metricsNode
	proxyable := kwokkubelet.Address() != "127.0.0.1"
	if proxyable {
		// kwok registers a node's pods on its first scrape and reports them
		// from the next one on.
		waitFor(t, "pod series in "+vnode+"'s metrics", func(ctx context.Context) (string, error) {
			out, err := s.Virtual.Kubectl(ctx, "get", "--raw", "/api/v1/nodes/"+vnode+"/proxy/metrics/resource")
			if err != nil {
				return err.Error(), nil
			}
			if !strings.Contains(out, `node_cpu_usage_seconds_total`) {
				return out, nil
			}
			if strings.Contains(out, stack.MountNamespace) {
				t.Fatalf("physical names in the virtual node's metrics:\n%s", out)
			}
			return "", nil
		})
	}

	token := metricsReaderToken(t)
	node, err := s.VirtualKube.CoreV1().Nodes().Get(ctx, vnode, metav1.GetOptions{})
	step(t, "get "+vnode, err)
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if len(node.Status.Addresses) != 1 || node.Status.Addresses[0].Address != kwokkubelet.Address() ||
		node.Annotations[kubeoceanv1alpha1.AnnotationKubeletPort] != strconv.Itoa(int(port)) {
		t.Fatalf("%s advertises %v port %d (annotations %v), want Kubeocean's kubelet API on the pod IP %s of the shipped --kubelet-address",
			vnode, node.Status.Addresses, port, node.Annotations, kwokkubelet.Address())
	}
	url := "https://" + net.JoinHostPort(node.Status.Addresses[0].Address, strconv.Itoa(int(port))) + "/metrics/resource"
	if code, body := kubeletGet(t, url, ""); code != http.StatusUnauthorized {
		t.Errorf("%s without credentials: %d %s, want 401", url, code, body)
	}
	code, body := kubeletGet(t, url, token)
	if code == http.StatusUnauthorized || code == http.StatusForbidden || (proxyable && code != http.StatusOK) {
		t.Errorf("%s as a metrics reader: %d %s", url, code, body)
	}
}

// metricsReaderToken makes the ServiceAccount default/metrics-reader with
// what metrics-server needs of nodes and returns a token of it.
func metricsReaderToken(t *testing.T) string {
	ctx, s := t.Context(), world
	name := "metrics-reader"
	_, err := s.VirtualKube.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	step(t, "create ServiceAccount "+name, err)
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/metrics", "nodes/stats"}, Verbs: []string{"get"}}},
	}
	_, err = s.VirtualKube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	step(t, "create ClusterRole "+name, err)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}},
	}
	_, err = s.VirtualKube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	step(t, "create ClusterRoleBinding "+name, err)
	token, err := s.Virtual.ServiceAccountToken(ctx, "default", name)
	step(t, "token of "+name, err)
	return token
}

// kubeletGet calls a kubelet API with an optional bearer token, not
// checking the serving certificate (self-signed in the shipped setup).
func kubeletGet(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	step(t, "request "+url, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed serving certificate
	resp, err := client.Do(req)
	step(t, "GET "+url, err)
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
