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

package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

// binary is a running kubeocean-syncer or kubeocean-manager.
type binary struct {
	*controlplane.Process
	name string
	// metricsAddress is host:port of its /metrics.
	metricsAddress string
}

// startSyncer runs kubeocean-syncer for the binding, as its Deployment
// would, with the virtual cluster's admin kubeconfig (the shipped RBAC is
// tested by test/e2e).
func startSyncer(t *testing.T, name string) *binary {
	t.Helper()
	return startBinary(t, name, env.syncerBin, "--cluster-binding="+bindingName)
}

// startManager runs kubeocean-manager running its syncers in-process.
func startManager(t *testing.T, name string, args ...string) *binary {
	t.Helper()
	return startBinary(t, name, env.managerBin, append([]string{"--syncer-mode=in-process"}, args...)...)
}

func startBinary(t *testing.T, name, bin string, args ...string) *binary {
	t.Helper()
	addrs, err := controlplane.FreeLoopbackAddresses(2)
	if err != nil {
		t.Fatal(err)
	}
	metrics, health := addrs[0], addrs[1]
	all := append([]string{
		"--kubeconfig=" + env.virtual.KubeconfigPath,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + health,
		"-v=2",
	}, args...)
	p, err := env.virtual.StartProcess(name, bin, all...)
	if err != nil {
		t.Fatal(err)
	}
	b := &binary{Process: p, name: name, metricsAddress: metrics}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", p.LogPath(), p.Tail(60))
		}
		p.Stop()
	})
	return b
}

// kill ends the binary with SIGKILL and checks it was still running, so a
// binary that had crashed by itself is not mistaken for one we killed.
func (b *binary) kill(t *testing.T) {
	t.Helper()
	if exited, err := b.Exited(); exited {
		t.Fatalf("%s exited by itself (%v) before the kill; last lines:\n%s", b.name, err, b.Tail(40))
	}
	b.Kill()
}

// requireRunning fails the test if the binary has exited.
func (b *binary) requireRunning(t *testing.T) {
	t.Helper()
	if exited, err := b.Exited(); exited {
		t.Fatalf("%s exited (%v); last lines:\n%s", b.name, err, b.Tail(40))
	}
}

// sample is one series of a Prometheus text exposition.
type sample struct {
	labels map[string]string
	value  float64
}

// scrape reads the binary's series of metric name from /metrics.
func (b *binary) scrape(ctx context.Context, name string) ([]sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.metricsAddress+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET /metrics of %s: %s: %s", b.name, resp.Status, body)
	}
	return parseSamples(resp.Body, name)
}

// parseSamples reads the samples of one metric from the text format; label
// values in our metrics hold no quotes, commas or escapes.
func parseSamples(r io.Reader, name string) ([]sample, error) {
	var samples []sample
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := strings.TrimPrefix(line, name)
		if strings.HasPrefix(rest, "{") {
			end := strings.Index(rest, "}")
			if end < 0 {
				return nil, fmt.Errorf("malformed sample %q", line)
			}
			for _, pair := range strings.Split(rest[1:end], ",") {
				key, value, ok := strings.Cut(pair, "=")
				if !ok {
					return nil, fmt.Errorf("malformed label in %q", line)
				}
				s.labels[key] = strings.Trim(value, `"`)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", line, err)
		}
		s.value = v
		samples = append(samples, s)
	}
	return samples, scanner.Err()
}
