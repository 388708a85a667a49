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

// Package dns tests kubeocean-dns against a real physical control plane:
// kube-apiserver with kube-controller-manager (whose EndpointSlice
// controller writes the slices of mirrors with a selector) and kwok (which
// runs the pods behind them, with IPs and readiness). The server runs in
// the test process and is queried with a real DNS client.
package dns

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

var physicalCluster *controlplane.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer controlplane.StopAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := controlplane.Start(ctx, controlplane.Options{Name: "physical", ControllerManager: true, Kwok: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	physicalCluster = c
	return m.Run()
}
