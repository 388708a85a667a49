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
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
)

// EnvTestBin names a folder holding prebuilt binaries. When it is unset the
// package runs hack/testbin.sh, which builds whatever is missing into a cache.
const EnvTestBin = "KUBEOCEAN_TESTBIN"

const (
	binEtcd              = "etcd"
	binAPIServer         = "kube-apiserver"
	binControllerManager = "kube-controller-manager"
	binScheduler         = "kube-scheduler"
	binKwok              = "kwok"
	kwokStagesDir        = "kwok-stages"
)

var (
	testBinOnce sync.Once
	testBinDir  string
	testBinErr  error
)

// binaryDir returns the folder with the control-plane binaries, building them
// on first use. The answer is cached per process: every test shares one build.
func binaryDir() (string, error) {
	testBinOnce.Do(func() {
		if dir := os.Getenv(EnvTestBin); dir != "" {
			testBinDir = dir
			return
		}
		testBinDir, testBinErr = runTestBinScript()
	})
	return testBinDir, testBinErr
}

// runTestBinScript runs hack/testbin.sh with its progress on our stderr, so a
// developer waiting on a cold build sees what is happening.
func runTestBinScript() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	script := filepath.Join(root, "hack", "testbin.sh")
	cmd := exec.Command(script)
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	// Do not leave a build running once the test binary is gone (for example
	// after a -timeout panic); the script builds into temp files, so a killed
	// build leaves nothing half-written behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building test binaries with %s (set %s to use prebuilt ones): %w", script, EnvTestBin, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" {
		return "", fmt.Errorf("%s printed no folder", script)
	}
	return dir, nil
}

// moduleRoot finds the folder holding go.mod, starting from this source file
// (known at compile time) and falling back to the working folder, which is
// the package folder under `go test`.
func moduleRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			if _, err := os.Stat(filepath.Join(dir, "hack", "testbin.sh")); err == nil {
				if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
					return dir, nil
				}
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", errors.New("cannot find the module root (a folder with go.mod and hack/testbin.sh); set " + EnvTestBin)
}

// binaries are the resolved paths a cluster needs.
type binaries struct {
	dir        string
	kwokStages []string
}

func (b binaries) path(name string) string { return filepath.Join(b.dir, name) }

// resolveBinaries checks up front that everything opts asks for exists, so a
// missing binary is one clear error rather than a process that fails to start.
func resolveBinaries(opts Options) (binaries, error) {
	dir, err := binaryDir()
	if err != nil {
		return binaries{}, err
	}
	b := binaries{dir: dir}
	needed := []string{binEtcd, binAPIServer}
	if opts.ControllerManager {
		needed = append(needed, binControllerManager)
	}
	if opts.Scheduler {
		needed = append(needed, binScheduler)
	}
	if opts.Kwok {
		needed = append(needed, binKwok)
	}
	for _, name := range needed {
		info, err := os.Stat(b.path(name))
		if err != nil {
			return binaries{}, fmt.Errorf("test binary %s: %w (run hack/testbin.sh or fix %s)", name, err, EnvTestBin)
		}
		if info.IsDir() || info.Mode()&0o111 == 0 {
			return binaries{}, fmt.Errorf("test binary %s is not an executable file", b.path(name))
		}
	}
	if opts.Kwok {
		stages, err := filepath.Glob(filepath.Join(dir, kwokStagesDir, "*.yaml"))
		if err != nil {
			return binaries{}, err
		}
		if len(stages) == 0 {
			return binaries{}, fmt.Errorf("no kwok stage files in %s", filepath.Join(dir, kwokStagesDir))
		}
		b.kwokStages = stages
	}
	return b, nil
}
