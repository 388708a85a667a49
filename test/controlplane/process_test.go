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
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExitErrorRecognisesPortInUse(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		portInUse    bool
	}{
		{"port taken", "echo 'listen tcp 127.0.0.1:1234: bind: address already in use' >&2; exit 1", true},
		{"other failure", "echo 'Error: unknown flag: --nope' >&2; exit 1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := startProcess(t.TempDir(), "fake", "/bin/sh", []string{"-c", tc.script}, nil)
			if err != nil {
				t.Fatal(err)
			}
			<-p.done
			err = p.exitError()
			if errors.Is(err, errPortInUse) != tc.portInUse {
				t.Errorf("errors.Is(%v, errPortInUse) = %v, want %v", err, !tc.portInUse, tc.portInUse)
			}
			if !strings.Contains(err.Error(), "exit status 1") {
				t.Errorf("error lacks the exit status: %v", err)
			}
		})
	}
}

// TestStopEscalatesToSIGKILL covers a component that ignores SIGTERM, and a
// child it forked: both must be gone when stop returns.
func TestStopEscalatesToSIGKILL(t *testing.T) {
	defer func(old time.Duration) { stopGracePeriod = old }(stopGracePeriod)
	stopGracePeriod = 200 * time.Millisecond

	dir := t.TempDir()
	p, err := startProcess(dir, "stubborn", "/bin/sh", []string{"-c", `trap '' TERM; sleep 60 & echo "child $!"; wait`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var child int
	deadline := time.Now().Add(5 * time.Second)
	for child == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		for _, line := range strings.Split(p.tail(5), "\n") {
			if rest, ok := strings.CutPrefix(line, "child "); ok {
				child = atoiOrZero(rest)
			}
		}
	}
	if child == 0 {
		t.Fatalf("no child pid in log:\n%s", p.tail(5))
	}

	start := time.Now()
	p.stop()
	if elapsed := time.Since(start); elapsed < stopGracePeriod {
		t.Errorf("stop returned after %v, before the grace period: SIGTERM was not ignored?", elapsed)
	}
	if !p.exited() {
		t.Error("process still running after stop")
	}
	// The child may linger as a zombie of init for a moment.
	waitGone(t, child)
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || isZombie(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("process %d still alive", pid)
}

// isZombie reports a process that has exited but not been reaped yet.
func isZombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

func atoiOrZero(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}
