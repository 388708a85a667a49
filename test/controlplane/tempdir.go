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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const (
	dirPrefix = "kubeocean-"
	// ownerFile in a cluster folder holds the host name and pid of the test
	// process that owns it (the host name because a pid means nothing in
	// another container sharing /tmp). A process killed without a chance to clean up (a -timeout
	// panic, SIGKILL) leaves its folders behind; the next run removes those
	// whose owner is gone. Kept folders lose the file, so they stay.
	ownerFile = ".owner-pid"
)

var sweepOnce sync.Once

// makeClusterDir creates a cluster's temporary folder, first removing
// folders that earlier, killed test processes left behind.
func makeClusterDir(name string) (string, error) {
	sweepOnce.Do(sweepOrphanedDirs)
	dir, err := os.MkdirTemp("", dirPrefix+safeName(name)+"-")
	if err != nil {
		return "", err
	}
	owner := []byte(hostname() + " " + strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(filepath.Join(dir, ownerFile), owner, 0o644); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}

// keepClusterDir marks a folder as kept on purpose, out of the sweep's reach.
func keepClusterDir(dir string) {
	_ = os.Remove(filepath.Join(dir, ownerFile))
}

func sweepOrphanedDirs() {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*", ownerFile))
	for _, owner := range owners {
		data, err := os.ReadFile(owner)
		if err != nil {
			continue
		}
		host, pidText, _ := strings.Cut(strings.TrimSpace(string(data)), " ")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || host != hostname() {
			continue
		}
		// Only a definite "no such process" counts: a reused pid or a
		// process of another user (EPERM) keeps the folder.
		if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			_ = os.RemoveAll(filepath.Dir(owner))
		}
	}
}

func hostname() string {
	name, _ := os.Hostname()
	return name
}

// safeName makes a name usable in a file name (test names contain slashes).
func safeName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		default:
			return '_'
		}
	}, name)
}
