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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/manager"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestManagerBinary checks the built kubeocean-manager as an operator runs
// it: --version, refused flags, JSON logs that name the version and the
// settings, the build-info metric, and an exit after SIGTERM well within
// the shipped termination grace period while a syncer runs in it; and,
// with --metrics-secure, metrics and profiles only for the callers the
// virtual apiserver authenticates and authorizes.
func TestManagerBinary(t *testing.T) {
	binary := filepath.Join(t.TempDir(), "kubeocean-manager")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/kubeocean-manager")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	t.Run("--version", func(t *testing.T) {
		out, err := exec.Command(binary, "--version").Output()
		if err != nil || !strings.HasPrefix(string(out), "kubeocean-manager v") {
			t.Fatalf("--version: %v, %q", err, out)
		}
	})

	t.Run("bad flags exit 2 with the reason", func(t *testing.T) {
		for _, tc := range []struct{ flag, want string }{
			{"--kube-api-qps=abc", `invalid argument "abc" for "--kube-api-qps" flag: not a number`},
			{"--physical-kube-api-qps=-5", `"--physical-kube-api-qps" flag: must be greater than 0`},
			{"--workers=-3", `"--workers" flag: must be at least 1`},
			{"--syncer-mode=sideways", `--syncer-mode must be "deployment" or "in-process"`},
		} {
			var stderr bytes.Buffer
			cmd := exec.Command(binary, "--kubeconfig="+virtualCluster.KubeconfigPath, tc.flag)
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != app.ExitBadArgs || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("%s: %v, stderr %q, want exit 2 and %q", tc.flag, err, stderr.String(), tc.want)
			}
		}
	})

	t.Run("metrics and profiles only for whom the apiserver authorizes", func(t *testing.T) {
		checkSecureMetrics(t, binary)
	})

	t.Run("JSON logs, build info and a prompt shutdown", func(t *testing.T) {
		w := newWorld(t)
		const name = "mgr-binary"
		w.putSecret(t, name+"-kubeconfig", kubeconfigData(physicalCluster.Kubeconfig))
		// Before the binding's cleanup below, so that it runs after it: the
		// node must outlive the pods that unbinding deletes.
		lendNode(t, w, name, name+"-node")
		metrics := freeAddr(t)
		cmd := exec.Command(binary, "--kubeconfig="+virtualCluster.KubeconfigPath, "--syncer-mode=in-process",
			"--leader-elect", "--leader-elect-resource-name=mgr-binary", "--logging-format=json",
			"--metrics-bind-address="+metrics, "--health-probe-bind-address=0")
		logs := &lineBuffer{}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			// The binding's finalizer needs a manager: an in-process one
			// removes it after the binary is gone.
			startManager(t, func(_ *app.Options, o *manager.Options) { o.SyncerMode = manager.ModeInProcess })
			w.deleteBinding(t, name, 90*time.Second)
		})

		w.createBinding(t, name, name)
		w.waitPhase(t, name, kubeoceanv1alpha1.ClusterBindingReady, kubeoceanv1alpha1.ReasonReady, 60*time.Second)
		// The binding lends one node of 4 CPUs and 8Gi, Ready.
		for _, want := range []string{
			`kubeocean_build_info{commit=`,
			`kubeocean_binding_virtual_nodes{binding="mgr-binary",ready="True"} 1`,
			`kubeocean_binding_lent_capacity{binding="mgr-binary",resource="cpu"} 4`,
			`kubeocean_binding_lent_capacity{binding="mgr-binary",resource="memory"} 8.589934592e+09`,
			`kubeocean_binding_pods{binding="mgr-binary",phase="Running"} 0`,
			`kubeocean_client_requests_total{cluster="physical",code="200",resource="nodes",verb="watch"}`,
			`kubeocean_client_requests_total{cluster="virtual",code="201",resource="nodes",verb="create"} 1`,
			`kubeocean_client_request_duration_seconds_count{cluster="virtual",resource="nodes",verb="create"} `,
		} {
			waitFor(t, 30*time.Second, "/metrics shows "+want, func(context.Context) (bool, error) {
				status, body := httpGet("http://" + metrics + "/metrics")
				return status == 200 && strings.Contains(body, want), nil
			})
		}

		// One pod on the virtual node: it runs in the physical cluster, and
		// both hops of its sync are timed.
		createNamespace(t, w.virtual, name)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: "web"}, Spec: corev1.PodSpec{
			NodeName:    kubeoceanv1alpha1.VirtualNodeName(name, name+"-node"),
			Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		}}
		if _, err := w.virtual.CoreV1().Pods(name).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`kubeocean_binding_pods{binding="mgr-binary",phase="Running"} 1`,
			`kubeocean_pod_sync_to_physical_seconds_count{binding="mgr-binary"} 1`,
			`kubeocean_pod_running_to_virtual_seconds_count{binding="mgr-binary"} 1`,
			`kubeocean_pods_lost_total{binding="mgr-binary"} 0`,
		} {
			waitFor(t, 60*time.Second, "/metrics shows "+want, func(context.Context) (bool, error) {
				status, body := httpGet("http://" + metrics + "/metrics")
				return status == 200 && strings.Contains(body, want), nil
			})
		}

		_, body := httpGet("http://" + metrics + "/metrics")
		checkDashboard(t, body)

		start := time.Now()
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		grace := shippedGracePeriod(t)
		select {
		case err := <-exited:
			took := time.Since(start)
			t.Logf("kubeocean-manager exited %v after SIGTERM (shipped grace period %v)", took.Round(time.Millisecond), grace)
			if err != nil {
				t.Errorf("exit after SIGTERM: %v", err)
			}
			if took > grace/2 {
				t.Errorf("took %v to stop, more than half the shipped grace period %v", took, grace)
			}
		case <-time.After(grace):
			t.Fatalf("still running %v after SIGTERM: the kubelet would kill it", grace)
		}

		checkJSONLogs(t, logs.Lines())
	})
}

// lendNode creates a kwok node of 4 CPUs and 8Gi that binding selects,
// and a policy lending it in full; both are removed when the test ends.
func lendNode(t *testing.T, w *world, binding, node string) {
	t.Helper()
	ctx := t.Context()
	if _, err := w.physical.CoreV1().Nodes().Create(ctx, testenv.KwokNode(node, "4", "8Gi", map[string]string{"suite": binding}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &kubeoceanv1alpha1.ResourceLeasingPolicy{ObjectMeta: metav1.ObjectMeta{Name: binding},
		Spec: kubeoceanv1alpha1.ResourceLeasingPolicySpec{Cluster: binding}}
	if _, err := w.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w.physicalOcean.KubeoceanV1alpha1().ResourceLeasingPolicies().Delete(context.Background(), binding, metav1.DeleteOptions{})
		_ = w.physical.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{})
	})
}

// checkDashboard: every metric the shipped Grafana dashboard queries is one
// the manager exports (with its syncer in-process, all of them), so the
// dashboard cannot drift from the code.
func checkDashboard(t *testing.T, metrics string) {
	t.Helper()
	data, err := os.ReadFile("../../manifests/monitoring/kubeocean-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dashboard); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	// Series of these appear with their first observation, which this
	// test does not make: kubelet API traffic (test/e2e makes it).
	later := map[string]bool{"kubeocean_kubelet_api_requests_total": true, "kubeocean_kubelet_api_open_streams": true}
	name := regexp.MustCompile(`kubeocean_[a-z_]+`)
	queried := 0
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			for _, m := range name.FindAllString(target.Expr, -1) {
				queried++
				if !later[m] && !strings.Contains(metrics, "\n"+m) {
					t.Errorf("panel %q queries %s, which the manager does not export", p.Title, m)
				}
			}
		}
	}
	if queried < 10 {
		t.Fatalf("the dashboard queries only %d metrics", queried)
	}
}

// checkJSONLogs: every line is a JSON object, and the start-up line names
// the version and the settings.
func checkJSONLogs(t *testing.T, lines []string) {
	t.Helper()
	var started, connected bool
	for _, line := range lines {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Errorf("not a JSON log line: %q", line)
			continue
		}
		switch entry["msg"] {
		case "Starting":
			settings, _ := entry["settings"].([]any)
			started = entry["version"] != nil && entry["commit"] != nil &&
				strings.Contains(fmt.Sprint(settings), "--syncer-mode=in-process")
		case "Connected to the API server":
			connected = entry["serverVersion"] != nil
		}
	}
	if !started || !connected {
		t.Errorf("start-up lines missing (Starting with version and settings: %v; Connected: %v) in %d lines", started, connected, len(lines))
	}
}

func shippedGracePeriod(t *testing.T) time.Duration {
	t.Helper()
	data, err := os.ReadFile("../../manifests/deploy/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	seconds := int64(30) // the Kubernetes default
	if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != nil {
		seconds = *g
	}
	return time.Duration(seconds) * time.Second
}

// lineBuffer collects a process's output lines.
type lineBuffer struct {
	mu      sync.Mutex
	partial bytes.Buffer
	lines   []string
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial.Write(p)
	for {
		line, err := b.partial.ReadString('\n')
		if errors.Is(err, io.EOF) {
			b.partial.WriteString(line)
			return len(p), nil
		}
		b.lines = append(b.lines, strings.TrimSuffix(line, "\n"))
	}
}

func (b *lineBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}
