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
	"net"
	"strconv"
	"syscall"
)

// Process is a program run beside a cluster's components, such as a
// Kubeocean binary under test. Its output goes to <Cluster.Dir>/<name>.log.
type Process struct {
	p *process
}

// StartProcess runs bin with args beside the cluster's components. The
// cluster stops it before its own components (and removes its log with
// the cluster folder); Stop stops it earlier.
func (c *Cluster) StartProcess(name, bin string, args ...string) (*Process, error) {
	p, err := c.run(name, bin, args, nil)
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// LogPath is the file holding the process's standard output and error.
func (p *Process) LogPath() string { return p.p.logPath }

// Stop sends SIGTERM, then SIGKILL after a grace period, and returns once
// the process has been reaped. It is idempotent.
func (p *Process) Stop() { p.p.stop() }

// Kill ends the process and anything it forked with SIGKILL, as the
// kernel's OOM killer or a node failure would, with no chance to clean up,
// and returns once it has been reaped.
func (p *Process) Kill() {
	if p.p.exited() {
		return
	}
	_ = syscall.Kill(-p.p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.p.done
}

// Exited reports whether the process has ended, and with what error.
func (p *Process) Exited() (bool, error) {
	if !p.p.exited() {
		return false, nil
	}
	return true, p.p.waitErr
}

// Tail returns the last n lines of the process's log.
func (p *Process) Tail(n int) string { return p.p.tail(n) }

// FreeLoopbackAddress returns 127.0.0.1:<port> with a port free right now,
// for a process's listen flags.
func FreeLoopbackAddress() (string, error) {
	addrs, err := FreeLoopbackAddresses(1)
	if err != nil {
		return "", err
	}
	return addrs[0], nil
}

// FreeLoopbackAddresses returns n distinct free addresses on 127.0.0.1,
// held open together while they are picked, so no two are the same port.
func FreeLoopbackAddresses(n int) ([]string, error) {
	ports, err := freePorts(n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(ports))
	for i, p := range ports {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return addrs, nil
}

// Pids are the process IDs of the cluster's running components and of the
// processes started beside them, by name ("etcd", "kube-apiserver", "kwok",
// ...), so that a benchmark can read what each of them costs.
func (c *Cluster) Pids() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make(map[string]int, len(c.procs))
	for _, p := range c.procs {
		if !p.exited() {
			pids[p.name] = p.cmd.Process.Pid
		}
	}
	return pids
}
