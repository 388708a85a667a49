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

package app

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/klog/v2"

	"github.com/kubeocean/kubeocean/internal/version"
)

// testCommand is a binary with one flag of its own, which must be set.
func testCommand(ran *bool) Command {
	var name string
	var workers = 2
	return Command{
		Options: NewOptions("kubeocean-test"),
		Short:   "A test binary.",
		AddFlags: func(fss *cliflag.NamedFlagSets) {
			fs := fss.FlagSet("Test")
			fs.StringVar(&name, "name", "", "A name (required).")
			IntVar(fs, &workers, "workers", 1, "Workers.")
		},
		Validate: func() error {
			if name == "" {
				return errString("--name is required")
			}
			return nil
		},
		Setup: func() Setup {
			*ran = true
			return nil
		},
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func execute(t *testing.T, args ...string) (code int, stdout, stderr string, ran bool) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = testCommand(&ran).Execute(args, &out, &errOut)
	return code, out.String(), errOut.String(), ran
}

func TestExecuteVersion(t *testing.T) {
	code, out, _, ran := execute(t, "--version")
	if code != ExitOK || ran {
		t.Fatalf("--version: exit %d, ran %v", code, ran)
	}
	if want := "kubeocean-test " + version.Get().String() + "\n"; out != want {
		t.Fatalf("--version printed %q, want %q", out, want)
	}
}

func TestExecuteHelpShowsSections(t *testing.T) {
	code, out, _, ran := execute(t, "--help")
	if code != ExitOK || ran {
		t.Fatalf("--help: exit %d, ran %v", code, ran)
	}
	last := -1
	for _, section := range []string{SectionGeneric, SectionServing, SectionElection, SectionLogging, "Test"} {
		i := strings.Index(out, section+" flags:")
		if i < 0 || i < last {
			t.Fatalf("section %q missing or out of order in:\n%s", section, out)
		}
		last = i
	}
	for _, flag := range []string{"--kubeconfig", "--version", "--logging-format", "--leader-elect", "--name"} {
		if !strings.Contains(out, flag) {
			t.Errorf("--help lacks %s", flag)
		}
	}
}

// Every wrong command line exits 2 before anything runs, with a message
// that names the flag and what is wrong in words.
func TestExecuteRefusesBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--name=a", "--kube-api-qps=abc"}, `invalid argument "abc" for "--kube-api-qps" flag: not a number`},
		{[]string{"--name=a", "--kube-api-qps=-5"}, `"--kube-api-qps" flag: must be greater than 0`},
		{[]string{"--name=a", "--kube-api-burst=0"}, `"--kube-api-burst" flag: must be at least 1`},
		{[]string{"--name=a", "--workers=-3"}, `"--workers" flag: must be at least 1`},
		{[]string{"--name=a", "--gc-percent=off"}, `"--gc-percent" flag: must be a positive integer`},
		{[]string{"--name=a", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"--name=a", "extra"}, `unexpected argument "extra"`},
		{[]string{"--name=a", "--logging-format=yaml"}, `Unsupported log format`},
		{[]string{"--name=a", "--metrics-cert-dir=/certs"}, "--metrics-cert-dir needs --metrics-secure"},
		{nil, "--name is required"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, stderr, ran := execute(t, tt.args...)
			if code != ExitBadArgs || ran {
				t.Fatalf("exit %d, ran %v; stderr:\n%s", code, ran, stderr)
			}
			if !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "kubeocean-test --help") {
				t.Fatalf("stderr %q lacks %q and the hint", stderr, tt.want)
			}
			if strings.Contains(stderr, "strconv") || out != "" {
				t.Fatalf("raw parser error or output on stdout: %q %q", stderr, out)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, server string) string {
		path := filepath.Join(dir, name)
		kubeconfig := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
			"\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n"
		if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	flagFile, envFile := write("flag", "https://flag.example:6443"), write("env", "https://env.example:6443")
	tests := []struct {
		name, path, env, wantHost string
	}{
		{"the flag", flagFile, "", "https://flag.example:6443"},
		{"the flag over KUBECONFIG", flagFile, envFile, "https://flag.example:6443"},
		{"KUBECONFIG", "", envFile, "https://env.example:6443"},
		{"the first KUBECONFIG file that exists", "", filepath.Join(dir, "missing") + string(os.PathListSeparator) + envFile, "https://env.example:6443"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, err := loadConfig(tt.path, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if config.Host != tt.wantHost {
				t.Fatalf("host %q, want %q", config.Host, tt.wantHost)
			}
		})
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := loadConfig("", ""); err == nil || !strings.Contains(err.Error(), "$KUBECONFIG") {
		t.Fatalf("outside a cluster with no kubeconfig: %v", err)
	}
}

// An API server that does not answer yet is reported at the default
// verbosity on every attempt, and the wait ends once it answers.
func TestWaitForAPIServerSaysWhyAtDefaultVerbosity(t *testing.T) {
	defer func(d time.Duration) { reachFirstRetry = d }(reachFirstRetry)
	reachFirstRetry = 10 * time.Millisecond
	var calls atomic.Int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "etcd is not ready", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(`{"gitVersion":"v1.36.3"}`))
	}))
	defer server.Close()
	kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: server.URL})

	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{Verbosity: 0})
	ctx := klog.NewContext(context.Background(), logger)
	if !waitForAPIServer(ctx, kube.Discovery().RESTClient(), server.URL) {
		t.Fatal("the wait gave up although the API server answered")
	}
	mu.Lock()
	defer mu.Unlock()
	failures := 0
	for _, l := range lines {
		if strings.Contains(l, "Cannot reach the API server") && strings.Contains(l, "etcd is not ready") {
			failures++
		}
	}
	if failures != 2 || !strings.Contains(lines[len(lines)-1], `"serverVersion"="v1.36.3"`) {
		t.Fatalf("logged at the default verbosity:\n%s", strings.Join(lines, "\n"))
	}
}

func TestWaitForAPIServerStopsWithContext(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer server.Close()
	kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: server.URL})
	ctx, cancel := context.WithTimeout(klog.NewContext(context.Background(), logr.Discard()), 100*time.Millisecond)
	defer cancel()
	if waitForAPIServer(ctx, kube.Discovery().RESTClient(), server.URL) {
		t.Fatal("reported an answer from an API server that never answered")
	}
}

func TestBuildInfoMetric(t *testing.T) {
	registry := prometheus.NewRegistry()
	if err := registerBuildInfo(registry, "kubeocean-test"); err != nil {
		t.Fatal(err)
	}
	v := version.Get()
	want := `
# HELP kubeocean_build_info The build of this process: always 1, with its version, commit and Go version as labels.
# TYPE kubeocean_build_info gauge
kubeocean_build_info{commit="` + v.GitCommit + `",component="kubeocean-test",go_version="` + v.GoVersion + `",version="` + v.GitVersion + `"} 1
`
	if err := testutil.GatherAndCompare(registry, strings.NewReader(want), "kubeocean_build_info"); err != nil {
		t.Fatal(err)
	}
}
