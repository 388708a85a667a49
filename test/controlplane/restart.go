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
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"syscall"
	"time"
)

// StopAPIServer kills the cluster's kube-apiserver with SIGKILL, as a crash
// or a lost machine ends it: clients see refused connections until
// StartAPIServer runs it again. etcd and the other components keep running.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	target := c.running(binAPIServer)
	c.mu.Unlock()
	if target == nil {
		return fmt.Errorf("cluster %s runs no %s", c.Name, binAPIServer)
	}
	// The component leads its own process group (see startProcess).
	if err := syscall.Kill(-target.cmd.Process.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("killing %s: %w", binAPIServer, err)
	}
	<-target.done
	return nil
}

// StartAPIServer starts the kube-apiserver again after StopAPIServer, on the
// same port, with the same flags, serving certificate and etcd, and returns
// once it is ready. Existing clients and kubeconfigs keep working.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	running := c.running(binAPIServer) != nil
	stopping := c.stopping
	c.mu.Unlock()
	if running || stopping {
		return fmt.Errorf("cluster %s: the %s runs or the cluster is stopping", c.Name, binAPIServer)
	}
	u, err := url.Parse(c.URL)
	if err != nil {
		return err
	}
	_, portText, err := net.SplitHostPort(u.Host)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// The killed apiserver's port may linger for a moment; retry the bind.
	for {
		err = c.restartAPIServer(ctx, port)
		if err == nil || ctx.Err() != nil || !errors.Is(err, errPortInUse) {
			return err
		}
		time.Sleep(time.Second)
	}
}

// restartAPIServer runs the apiserver with the flags of the first start and
// waits until it is ready. The serving certificate is still in the cert
// folder, so the cluster's URL, CA and kubeconfig stay as they are (and are
// not written again, since tests read them concurrently).
func (c *Cluster) restartAPIServer(ctx context.Context, port int) error {
	p, err := c.run(binAPIServer, c.bins.path(binAPIServer), c.apiServerArgs(port), nil)
	if err != nil {
		return err
	}
	client := c.Clientset()
	return waitUntil(ctx, p, "apiserver /readyz", func(ctx context.Context) error {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("%w: %s", err, body)
		}
		return nil
	})
}

// running returns the live process of a component, or nil; c.mu is held.
func (c *Cluster) running(name string) *process {
	for _, p := range c.procs {
		if p.name == name && !p.exited() {
			return p
		}
	}
	return nil
}
