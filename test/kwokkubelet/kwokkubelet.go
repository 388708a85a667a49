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

// Package kwokkubelet has kwok serve a kubelet API for the nodes of a test
// physical cluster (logs and attach from a file, exec as local commands,
// port 8080 of every pod forwarded to a local echo server, and
// /metrics/resource), and tells where Kubeocean's kubelet API can listen so
// that the apiserver proxies to it. The kubelet tests, the end-to-end
// tests, the demo and the kubelet benchmark build on it.
package kwokkubelet

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kubeocean/kubeocean/test/testenv"
)

// LogLines are what kwok serves as every container's log (and previous
// log) until Server.WriteLog replaces it.
var LogLines = []string{"first line", "second line", "third line"}

// PodPort is the pod port kwok forwards to the echo server.
const PodPort = 8080

// Address is where a kubelet API must listen for the apiserver to proxy to
// it: a non-loopback address when the host has one, since the apiserver
// refuses to proxy nodes/proxy requests (healthz, stats) to loopback
// addresses; logs, exec, attach and port-forward work on either.
func Address() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
				return ip.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// Server is the configuration of kwok's kubelet API and the echo server
// behind its port-forward.
type Server struct {
	// Args are kwok's flags (controlplane.Options.KwokArgs).
	Args []string
	// LogFile is the CRI-format log kwok serves for every container.
	LogFile string
	// EchoAddress is where kwok forwards PodPort of every pod.
	EchoAddress string
	echo        net.Listener
}

// New writes kwok's configuration into dir (which must outlive kwok) and
// starts the echo server; kwok serves /metrics/resource for metricsNode
// ("" for none). One node only: kwok's Metric for the path a kubelet has
// names its node, and two of them would claim the same path.
func New(dir, metricsNode string) (*Server, error) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go serveEcho(echo)
	s := &Server{LogFile: filepath.Join(dir, "container.log"), EchoAddress: echo.Addr().String(), echo: echo}
	if err := s.configure(dir, metricsNode); err != nil {
		_ = echo.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the echo server.
func (s *Server) Close() { _ = s.echo.Close() }

// WriteLog replaces every container's log with lines.
func (s *Server) WriteLog(lines []string) error {
	var log strings.Builder
	for i, line := range lines {
		fmt.Fprintf(&log, "2026-01-01T00:00:%02dZ stdout F %s\n", i%60, line)
	}
	return os.WriteFile(s.LogFile, []byte(log.String()), 0o644)
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

func (s *Server) configure(dir, metricsNode string) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	if err := s.WriteLog(LogLines); err != nil {
		return err
	}
	echoPort := s.echo.Addr().(*net.TCPAddr).Port
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
  - ports: [%d]
    target:
      port: %d
      address: 127.0.0.1
`, s.LogFile, s.LogFile, s.LogFile, dir, PodPort, echoPort)
	configFile := filepath.Join(dir, "kwok-kubelet.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return err
	}
	ip := Address()
	s.Args = []string{
		"--node-ip=" + ip, "--node-port=" + strconv.Itoa(port),
		"--server-address=" + net.JoinHostPort(ip, strconv.Itoa(port)), "-c", configFile,
	}
	if metricsNode == "" {
		return nil
	}
	metrics, err := resourceMetricsConfig(dir, metricsNode)
	if err != nil {
		return fmt.Errorf("kwok's /metrics/resource: %w", err)
	}
	s.Args = append(s.Args, "-c", metrics)
	return nil
}

// resourceMetricsConfig has kwok serve /metrics/resource for node, from
// the Metric kwok ships (module kustomize/metrics/resource; read from the
// module, not copied) with the path a kubelet has: kwok takes the node
// from the path, or else from the Metric's name.
func resourceMetricsConfig(dir, node string) (string, error) {
	// `go mod download` fills the module folder and names it; `go list -m`
	// alone names an empty folder on a cold module cache (the testbin's
	// binaries may be cached while the module cache is not).
	download := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/kwok")
	download.Dir = testenv.RepoPath("hack/tools/kwok")
	out, err := download.Output()
	if err != nil {
		return "", fmt.Errorf("downloading the kwok module: %w", err)
	}
	var module struct{ Dir string }
	if err := json.Unmarshal(out, &module); err != nil || module.Dir == "" {
		return "", fmt.Errorf("locating the kwok module in %q: %v", out, err)
	}
	metric, err := os.ReadFile(filepath.Join(module.Dir, "kustomize/metrics/resource/metrics-resource.yaml"))
	if err != nil {
		return "", err
	}
	// The usage the Metric reports: kwok's own ClusterResourceUsage, which
	// gives every pod 1m of CPU and 1Mi of memory unless an annotation says
	// otherwise; without one, every figure is 0.
	usage, err := os.ReadFile(filepath.Join(module.Dir, "kustomize/metrics/usage/usage-from-annotation.yaml"))
	if err != nil {
		return "", err
	}
	text := strings.Replace(string(metric), "name: metrics-resource", "name: "+node, 1)
	text = strings.Replace(text, `path: "/metrics/nodes/{nodeName}/metrics/resource"`, `path: "/metrics/resource"`, 1)
	if !strings.Contains(text, `path: "/metrics/resource"`) {
		return "", fmt.Errorf("kwok's Metric has another path now")
	}
	path := filepath.Join(dir, "kwok-metrics.yaml")
	return path, os.WriteFile(path, []byte(text+"\n---\n"+string(usage)), 0o644)
}

// FreePortRange is the first of n consecutive TCP ports, for
// --kubelet-port-range, on which nothing listens now on any address. The
// range lies below the kernel's ephemeral ports, which outgoing
// connections take at any moment (a range picked next to a free ephemeral
// port once met a connection on one of its ports), so only another
// listener can take one of them before Kubeocean binds it.
func FreePortRange(n int) (int, error) {
	const lowest = 20000
	below := ephemeralStart() - n
	for range 50 {
		first := lowest + rand.IntN(below-lowest)
		if allFree(first, n) {
			return first, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports between %d and %d", n, lowest, below+n)
}

// ephemeralStart is the first port of the kernel's ephemeral range.
func ephemeralStart() int {
	const fallback = 32768 // Linux's default
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return fallback
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start < 21000 {
		return fallback
	}
	return start
}

// allFree binds every port of the range on all addresses at once, then
// lets them go.
func allFree(first, n int) bool {
	for port := first; port < first+n; port++ {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			return false
		}
		defer func() { _ = l.Close() }()
	}
	return true
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
