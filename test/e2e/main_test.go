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

// Package e2e deploys Kubeocean from the shipped manifests on a virtual and
// a physical cluster and runs the binaries as their ServiceAccounts, with
// only the shipped RBAC, while both apiservers keep an audit log. A
// permission the binaries miss shows as a refused request, one they are
// granted but never use as an unused grant: either fails the test.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/stack"
	"github.com/kubeocean/kubeocean/test/testenv"
)

var (
	// world is the stack of the running test (see startWorld).
	world *stack.Stack
	// managerBin and syncerBin are the binaries under test, built once.
	managerBin, syncerBin string
	auditPolicy           []byte
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer controlplane.StopAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	binDir, err := os.MkdirTemp("", "kubeocean-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	if managerBin, syncerBin, err = buildBinaries(ctx, binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if auditPolicy, err = os.ReadFile("testdata/audit-policy.yaml"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// buildBinaries builds kubeocean-manager and kubeocean-syncer as a user
// would run them (no race detector: they are separate processes).
func buildBinaries(ctx context.Context, dir string) (manager, syncer string, err error) {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+"/", "./cmd/kubeocean-manager", "./cmd/kubeocean-syncer")
	cmd.Dir = testenv.RepoPath(".")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("building the binaries: %w: %s", err, out)
	}
	return filepath.Join(dir, "kubeocean-manager"), filepath.Join(dir, "kubeocean-syncer"), nil
}
