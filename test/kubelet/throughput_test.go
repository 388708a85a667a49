package kubelet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestLogThroughput prints (does not judge) how fast kubectl logs reads a
// large log through the virtual cluster, beside the floor: kubectl logs of
// the same container straight from the physical cluster, in the same run.
// Run it with KUBEOCEAN_KUBELET_BENCH=1.
func TestLogThroughput(t *testing.T) {
	if os.Getenv("KUBEOCEAN_KUBELET_BENCH") == "" {
		t.Skip("a measurement: set KUBEOCEAN_KUBELET_BENCH=1")
	}
	w, vnode, _ := lend(t)
	testenv.CreateNamespace(t, w.Virtual, "bench")
	testenv.WaitFor(t, 30*time.Second, "the default ServiceAccount in bench", func(ctx context.Context) (bool, error) {
		_, err := w.Virtual.CoreV1().ServiceAccounts("bench").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	runPod(t, w, "bench", "big", vnode, nil)

	original, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = os.WriteFile(logFile, original, 0o644) }()
	line := fmt.Sprintf("2026-01-01T00:00:00Z stdout F %s\n", strings.Repeat("x", 200))
	const lines = 300_000 // about 69 MB
	if err := os.WriteFile(logFile, []byte(strings.Repeat(line, lines)), 0o644); err != nil {
		t.Fatal(err)
	}
	physical := physicalName(t, w, "bench", "big")
	measure := func(kubeconfig, ns, pod string) (time.Duration, int) {
		path, _ := controlplane.KubectlPath()
		start := time.Now()
		out, err := exec.CommandContext(t.Context(), path, "--kubeconfig="+kubeconfig, "logs", "-n", ns, pod).Output()
		if err != nil {
			t.Fatal(err)
		}
		return time.Since(start), len(out)
	}
	for round := 1; round <= 3; round++ {
		direct, n1 := measure(physicalCluster.KubeconfigPath, w.Mount, physical)
		virtual, n2 := measure(virtualCluster.KubeconfigPath, "bench", "big")
		if n1 != n2 {
			t.Fatalf("read %d bytes straight, %d through the virtual cluster", n1, n2)
		}
		mb := float64(n1) / 1e6
		t.Logf("round %d: %.0f MB: physical %.1f MB/s, virtual %.1f MB/s, ratio %.2f",
			round, mb, mb/direct.Seconds(), mb/virtual.Seconds(), direct.Seconds()/virtual.Seconds())
	}
}
