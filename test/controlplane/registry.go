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
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// The registry knows every cluster that is starting or running, so that an
// interrupt or a TestMain can stop them all in order.
var (
	registryMu        sync.Mutex
	registry          = map[*Cluster]struct{}{}
	signalHandlerOnce sync.Once
)

func register(c *Cluster) {
	signalHandlerOnce.Do(installSignalHandler)
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[c] = struct{}{}
}

func unregister(c *Cluster) {
	registryMu.Lock()
	defer registryMu.Unlock()
	delete(registry, c)
}

// StopAll stops every cluster of this process that has not been stopped yet,
// concurrently (each one in order). Call it from TestMain after m.Run when
// clusters are shared between tests.
func StopAll() {
	registryMu.Lock()
	clusters := make([]*Cluster, 0, len(registry))
	for c := range registry {
		clusters = append(clusters, c)
	}
	registryMu.Unlock()

	var wg sync.WaitGroup
	for _, c := range clusters {
		wg.Go(c.Stop)
	}
	wg.Wait()
}

// installSignalHandler makes Ctrl-C (or a SIGTERM from a CI runner) stop the
// clusters gracefully and remove their folders; Pdeathsig alone would kill
// the children but leave the folders behind. A second signal kills at once,
// because the handler restores the default action before stopping.
func installSignalHandler() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-signals
		signal.Stop(signals)
		fmt.Fprintf(os.Stderr, "controlplane: %v received, stopping test clusters\n", sig)
		StopAll()
		os.Exit(1)
	}()
}

// LeaveSignalsToCaller keeps the package from installing its interrupt
// handler (which stops every cluster and exits with status 1). A program
// that stops its clusters itself on a signal, such as the demo, calls it
// before starting any cluster.
func LeaveSignalsToCaller() {
	signalHandlerOnce.Do(func() {})
}
