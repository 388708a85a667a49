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

package integration

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeocean/kubeocean/internal/app"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestProcessWiring runs a binary's wiring against the real apiserver: it
// serves metrics and health, takes the leader Lease before running its
// controllers, and on shutdown stops them and releases the Lease.
func TestProcessWiring(t *testing.T) {
	kube := kubernetes.NewForConfigOrDie(virtualCluster.Config())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kubeocean-system"}}
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	opts := app.NewOptions("kubeocean-wiring-test")
	opts.Kubeconfig = virtualCluster.KubeconfigPath
	opts.Serving.MetricsBindAddress = freeAddr(t)
	opts.Serving.HealthProbeBindAddress = freeAddr(t)
	opts.Election.Enabled = true
	opts.Election.LeaseDuration, opts.Election.RenewDeadline, opts.Election.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	running := make(chan struct{})
	stopped := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- app.Run(ctx, opts, func(ctx context.Context, p *app.Process) ([]app.Runnable, error) {
			return []app.Runnable{{Name: "work", Run: func(ctx context.Context) error {
				close(running)
				<-ctx.Done()
				close(stopped)
				return nil
			}}}, nil
		})
	}()

	select {
	case <-running:
	case err := <-done:
		t.Fatalf("Run returned before running the work: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the work did not start after taking the lease")
	}
	lease, err := kube.CoordinationV1().Leases("kubeocean-system").Get(t.Context(), "kubeocean-wiring-test", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("the leader Lease is not held while the work runs: %v %+v", err, lease)
	}

	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet("http://" + opts.Serving.HealthProbeBindAddress + path); code != http.StatusOK {
			t.Errorf("%s = %d %s", path, code, body)
		}
	}
	code, body := httpGet("http://" + opts.Serving.MetricsBindAddress + "/metrics")
	if code != http.StatusOK || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, "leader_election_master_status") {
		t.Errorf("/metrics = %d, missing process or leader-election metrics:\n%.500s", code, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v on shutdown", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Run returned before the work stopped")
	}
	lease, err = kube.CoordinationV1().Leases("kubeocean-system").Get(context.Background(), "kubeocean-wiring-test", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if holder := lease.Spec.HolderIdentity; holder != nil && *holder != "" {
		t.Fatalf("the Lease is still held by %q after shutdown", *holder)
	}
	if code, _ := httpGet("http://" + opts.Serving.HealthProbeBindAddress + "/healthz"); code != 0 {
		t.Fatalf("the health server still answers (%d) after shutdown", code)
	}
}
