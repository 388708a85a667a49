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

package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

const binKubectl = "kubectl"

// KubectlPath returns the kubectl built with the control-plane binaries, so
// tests and the demo apply manifests exactly as a user would.
func KubectlPath() (string, error) {
	dir, err := binaryDir()
	if err != nil {
		return "", err
	}
	path := binaries{dir: dir}.path(binKubectl)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("test binary %s: %w (run hack/testbin.sh or fix %s)", binKubectl, err, EnvTestBin)
	}
	return path, nil
}

// Kubectl runs kubectl against the cluster with the admin kubeconfig and
// returns its standard output; a failure carries kubectl's standard error.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (string, error) {
	return c.KubectlAs(ctx, c.KubeconfigPath, args...)
}

// KubectlAs is Kubectl with another kubeconfig, such as one of a
// ServiceAccount.
func (c *Cluster) KubectlAs(ctx context.Context, kubeconfigPath string, args ...string) (string, error) {
	kubectl, err := KubectlPath()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig=" + kubeconfigPath}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s on %s: %w: %s", strings.Join(args, " "), c.Name, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
