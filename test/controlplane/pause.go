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
	"fmt"
	"syscall"
)

// PauseAPIServer freezes the cluster's kube-apiserver with SIGSTOP, as a
// hung or partitioned apiserver looks to its clients: connections open but
// nothing answers. It returns the function that resumes it; the cluster's
// Stop resumes it too, so a failed test cannot leave it frozen.
func (c *Cluster) PauseAPIServer() (resume func(), err error) {
	return c.pause(binAPIServer)
}

func (c *Cluster) pause(name string) (func(), error) {
	c.mu.Lock()
	var target *process
	for _, p := range c.procs {
		if p.name == name && !p.exited() {
			target = p
		}
	}
	c.mu.Unlock()
	if target == nil {
		return nil, fmt.Errorf("cluster %s runs no %s", c.Name, name)
	}
	// The component leads its own process group (see startProcess).
	pgid := -target.cmd.Process.Pid
	if err := syscall.Kill(pgid, syscall.SIGSTOP); err != nil {
		return nil, fmt.Errorf("pausing %s: %w", name, err)
	}
	resume := func() { _ = syscall.Kill(pgid, syscall.SIGCONT) }
	c.mu.Lock()
	c.resumers = append(c.resumers, resume)
	c.mu.Unlock()
	return resume, nil
}
