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
