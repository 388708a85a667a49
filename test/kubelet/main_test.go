// Package kubelet tests the kubelet API of virtual nodes on real clusters:
// the virtual apiserver reaches a virtual node's kubelet API in the syncer,
// which serves it through the physical apiserver from the physical node,
// whose kubelet API kwok serves (logs and attach from a file, exec as local
// commands, port-forward to a local listener).
package kubelet

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

var virtualCluster, physicalCluster *controlplane.Cluster

// logLines are what kwok serves as every container's log, in the CRI log
// format kwok reads.
var logLines = []string{"first line", "second line", "third line"}

// logFile is the log kwok serves for every container.
var logFile string

// nodeIP is the address of the physical nodes (kwok's kubelet API) and of
// the syncer's kubelet API.
var nodeIP string

// echoAddress is where kwok forwards port 8080 of every pod: an echo server.
var echoAddress string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubeocean-kubelet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = echo.Close() }()
	go serveEcho(echo)
	echoAddress = echo.Addr().String()
	nodeIP = kubeletAddress()
	kwokArgs, err := kwokServerArgs(dir, echo.Addr().(*net.TCPAddr).Port)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testenv.Main(m, controlplane.Options{ControllerManager: true}, controlplane.Options{Kwok: true, KwokArgs: kwokArgs},
		func(v, p *controlplane.Cluster) { virtualCluster, physicalCluster = v, p })
}

func serveEcho(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer func() { _ = conn.Close() }()
			_, _ = io.Copy(conn, conn)
		}()
	}
}

// kwokServerArgs configure kwok to serve a kubelet API on loopback for its
// nodes (which advertise 127.0.0.1 and that port), with every pod's logs,
// exec and port 8080 configured.
func kwokServerArgs(dir string, echoPort int) ([]string, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile = filepath.Join(dir, "container.log")
	var log string
	for i, line := range logLines {
		log += fmt.Sprintf("2026-01-01T00:00:0%dZ stdout F %s\n", i, line)
	}
	config := fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: all
spec:
  logs:
  - logsFile: %q
    previousLogsFile: %q
    follow: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterAttach
metadata:
  name: all
spec:
  attaches:
  - logsFile: %q
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata:
  name: all
spec:
  execs:
  - local:
      workDir: %q
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterPortForward
metadata:
  name: all
spec:
  forwards:
  - ports: [8080]
    target:
      port: %d
      address: 127.0.0.1
`, logFile, logFile, logFile, dir, echoPort)
	configFile := filepath.Join(dir, "kwok-kubelet.yaml")
	if err := os.WriteFile(logFile, []byte(log), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return nil, err
	}
	args := []string{
		"--node-ip=" + nodeIP, "--node-port=" + strconv.Itoa(port),
		"--server-address=" + net.JoinHostPort(nodeIP, strconv.Itoa(port)), "-c", configFile,
	}
	if metrics, err := resourceMetricsConfig(dir); err == nil {
		args = append(args, "-c", metrics)
	} else {
		fmt.Fprintln(os.Stderr, "kwok serves no /metrics/resource:", err)
	}
	return args, nil
}

// resourceMetricsConfig has kwok serve /metrics/resource for the node
// physNode, from the Metric kwok ships (module kustomize/metrics/resource;
// read from the module, not copied) with the path a kubelet has. kwok
// takes the node from the path, or else from the Metric's name.
func resourceMetricsConfig(dir string) (string, error) {
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kwok")
	list.Dir = testenv.RepoPath("hack/tools/kwok")
	out, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("locating the kwok module: %w", err)
	}
	module := strings.TrimSpace(string(out))
	metric, err := os.ReadFile(filepath.Join(module, "kustomize/metrics/resource/metrics-resource.yaml"))
	if err != nil {
		return "", err
	}
	text := strings.Replace(string(metric), "name: metrics-resource", "name: "+physNode, 1)
	text = strings.Replace(text, `path: "/metrics/nodes/{nodeName}/metrics/resource"`, `path: "/metrics/resource"`, 1)
	if !strings.Contains(text, `path: "/metrics/resource"`) {
		return "", fmt.Errorf("kwok's Metric has another path now")
	}
	path := filepath.Join(dir, "kwok-metrics.yaml")
	return path, os.WriteFile(path, []byte(text), 0o644)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
