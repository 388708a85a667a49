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

// Package helm tests the Helm charts of manifests/charts with a real helm,
// built from its Go module by hack/testbin.sh: with their defaults the
// charts render exactly the objects of the plain manifests (which the RBAC
// audit of test/e2e runs on), the values change what they should, and both
// charts install into real virtual and physical control planes, where the
// demo's sample application then runs through a manager installed by the
// chart's RBAC.
package helm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const (
	// systemNamespace is where both charts are installed.
	systemNamespace = "kubeocean-system"
	virtualChart    = "manifests/charts/kubeocean"
	physicalChart   = "manifests/charts/kubeocean-physical"
)

var (
	// world is the demo's pair of clusters (virtual: controller-manager and
	// scheduler; physical: controller-manager and kwok), nothing installed;
	// virtual and physical are its clusters.
	world             *stack.Stack
	virtual, physical *controlplane.Cluster
	// managerBin is kubeocean-manager, built once.
	managerBin string
	// helmBin is the helm of hack/testbin.sh, helmHome its config and cache.
	helmBin, helmHome string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer controlplane.StopAll()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kubectl, err := controlplane.KubectlPath()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// hack/testbin.sh puts helm beside kubectl.
	helmBin = filepath.Join(filepath.Dir(kubectl), "helm")
	if _, err := os.Stat(helmBin); err != nil {
		fmt.Fprintf(os.Stderr, "helm from hack/testbin.sh: %v\n", err)
		return 1
	}
	if helmHome, err = os.MkdirTemp("", "kubeocean-helm-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(helmHome)
	managerBin = filepath.Join(helmHome, "kubeocean-manager")
	build := exec.CommandContext(ctx, "go", "build", "-o", managerBin, "./cmd/kubeocean-manager")
	build.Dir = testenv.RepoPath(".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kubeocean-manager: %v: %s\n", err, out)
		return 1
	}
	if world, err = stack.Start(ctx, stack.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	virtual, physical = world.Virtual, world.Physical
	return m.Run()
}

// runHelm runs helm in the repository with its own config and cache
// folders and returns its standard output.
func runHelm(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, helmBin, args...)
	cmd.Dir = testenv.RepoPath(".")
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(helmHome, "config"),
		"HELM_CACHE_HOME="+filepath.Join(helmHome, "cache"),
		"HELM_DATA_HOME="+filepath.Join(helmHome, "data"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// helmTemplate renders chart as `helm install` would into kubeocean-system,
// CRDs included.
func helmTemplate(t *testing.T, chart string, args ...string) objects {
	t.Helper()
	out, err := runHelm(t.Context(), append([]string{"template", "kubeocean", chart,
		"--namespace", systemNamespace, "--include-crds"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, out)
}

// kustomize builds a folder of manifests with the kubectl of the test
// binaries, as `kubectl apply -k` does.
func kustomize(t *testing.T, dir string) objects {
	t.Helper()
	kubectl, err := controlplane.KubectlPath()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), kubectl, "kustomize", testenv.RepoPath(dir)).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v", dir, err)
	}
	return parseObjects(t, string(out))
}

func readManifest(t *testing.T, file string) objects {
	t.Helper()
	data, err := os.ReadFile(testenv.RepoPath(file))
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, string(data))
}

// appVersion is the chart's appVersion, the default tag of its images.
func appVersion(t *testing.T, chart string) string {
	t.Helper()
	data, err := os.ReadFile(testenv.RepoPath(chart + "/Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("%s/Chart.yaml: no appVersion (%v)", chart, err)
	}
	return c.AppVersion
}
