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
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
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

// TestKubeletExecNeedsCreate runs the shipped manager and syncer on one
// lent node with the sample application, and opens exec sessions straight
// on the syncer's kubelet API with a WebSocket GET (see execNeedsCreate).
func TestKubeletExecNeedsCreate(t *testing.T) {
	s := startWorld(t)
	ctx := t.Context()
	step(t, "install CRDs", s.InstallCRDs(ctx))
	step(t, "install RBAC", s.InstallRBAC(ctx, "virtual"))
	step(t, "create physical nodes", s.CreateNodes(ctx, []string{metricsNode}, map[string]string{stack.LendableLabel: "true"}))
	physicalKubeconfig, err := s.PhysicalSyncerKubeconfig(ctx)
	step(t, "physical kubeconfig", err)
	step(t, "bind", s.Bind(ctx, physicalKubeconfig))
	_, err = s.Virtual.Kubectl(ctx, "apply", "-k", testenv.RepoPath("manifests/deploy"))
	step(t, "apply manifests/deploy", err)
	startManager(t, managerDeploymentArgs(t, "deployment")...)
	startSyncerOfDeployment(t)
	step(t, "virtual nodes Ready", s.WaitVirtualNodesReady(waitCtx(t), 1))
	step(t, "deploy the sample application", s.DeployApp(ctx))
	step(t, "application running", s.WaitAppRunning(waitCtx(t)))
	pods, err := s.VirtualKube.CoreV1().Pods(stack.AppNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + stack.AppName})
	step(t, "list the application's pods", err)
	if len(pods.Items) == 0 {
		t.Fatal("the application has no pods")
	}
	execNeedsCreate(t, &pods.Items[0])
}

// execNeedsCreate opens exec sessions straight on the syncer's kubelet
// API of the pod's virtual node, as the virtual apiserver would: with a
// WebSocket GET, an identity allowed only get nodes/proxy is refused by
// the syncer (403), one allowed create nodes/proxy gets past it; the
// latter also runs the command through SPDY (a POST), the way the virtual
// apiserver calls a kubelet. (A WebSocket GET then reaches the physical
// apiserver, which asks the syncer's identity for get pods/exec, which the
// shipped physical RBAC does not grant: only create.)
func execNeedsCreate(t *testing.T, pod *corev1.Pod) {
	ctx, s := t.Context(), world
	node, err := s.VirtualKube.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	step(t, "get "+pod.Spec.NodeName, err)
	addr := net.JoinHostPort(node.Status.Addresses[0].Address, strconv.Itoa(int(node.Status.DaemonEndpoints.KubeletEndpoint.Port)))
	path := "/exec/" + pod.Namespace + "/" + pod.Name + "/" + pod.Spec.Containers[0].Name +
		"?command=sh&command=-c&command=echo+hello+from+exec&output=1&error=1"
	tokens := map[string]string{}
	for _, verb := range []string{"get", "create"} {
		name := "nodes-proxy-" + verb
		grantNodesProxy(t, name, verb)
		token, err := s.Virtual.ServiceAccountToken(ctx, "default", name)
		step(t, "token of "+name, err)
		tokens[verb] = token
	}
	refusedBySyncer := "Forbidden (user=system:serviceaccount:default:nodes-proxy-"
	if code, body := websocketExec(t, addr, path, tokens["get"]); code != http.StatusForbidden || !strings.Contains(body, refusedBySyncer+"get, verb=create") {
		t.Errorf("WebSocket GET %s with get nodes/proxy: %d %q, want the syncer's 403 for verb create", path, code, body)
	}
	if code, body := websocketExec(t, addr, path, tokens["create"]); strings.Contains(body, refusedBySyncer) {
		t.Errorf("WebSocket GET %s with create nodes/proxy: %d %q, refused by the syncer", path, code, body)
	}
	config := &rest.Config{Host: "https://" + addr, BearerToken: tokens["create"], TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	executor, err := remotecommand.NewSPDYExecutor(config, http.MethodPost, &url.URL{Scheme: "https", Host: addr, Path: strings.Split(path, "?")[0], RawQuery: strings.Split(path, "?")[1]})
	step(t, "SPDY executor", err)
	var stdout, stderr bytes.Buffer
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil || stdout.String() != "hello from exec\n" {
		t.Errorf("SPDY exec with create nodes/proxy: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
}

// grantNodesProxy binds the ServiceAccount default/name to a ClusterRole
// of verb on nodes/proxy only.
func grantNodesProxy(t *testing.T, name, verb string) {
	ctx, s := t.Context(), world
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy"}, Verbs: []string{verb}}},
	}
	_, err := s.VirtualKube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{})
	step(t, "create ClusterRole "+name, err)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: name}},
	}
	_, err = s.VirtualKube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	step(t, "create ClusterRoleBinding "+name, err)
}

// websocketExec sends an exec upgrade as a WebSocket GET (protocol
// v5.channel.k8s.io) with a bearer token and returns the status code, and
// for a session what its stdout and stderr channels carried (until the
// status channel, or the end of the stream), else the body.
func websocketExec(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // self-signed serving certificate
	step(t, "dial the kubelet API at "+addr, err)
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: a3ViZW9jZWFuLWUyZS1rZXk=\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n", path, addr, token)
	step(t, "send the exec request", err)
	reader := bufio.NewReader(conn)
	resp, err := http.ReadResponse(reader, nil)
	step(t, "read the exec response", err)
	if resp.StatusCode != http.StatusSwitchingProtocols {
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	var output strings.Builder
	for {
		payload, err := readFrame(reader)
		if err != nil || len(payload) == 0 || payload[0] == 3 { // 3: the status channel, sent last
			return resp.StatusCode, output.String()
		}
		if payload[0] == 1 || payload[0] == 2 {
			output.Write(payload[1:])
		}
	}
}

// readFrame reads one unmasked WebSocket frame from the server and
// returns its payload.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var header [2]byte
	if _, err := io.ReadFull(r, header[:]); err != nil {
		return nil, err
	}
	n := uint64(header[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return nil, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if n > 1<<20 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	payload := make([]byte, n)
	_, err := io.ReadFull(r, payload)
	return payload, err
}
