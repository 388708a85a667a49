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

package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

// StartVirtualAndPhysical starts a virtual and a physical cluster at once
// and installs Kubeocean's CRDs in both, for a package's TestMain; stop them
// with controlplane.StopAll.
func StartVirtualAndPhysical(ctx context.Context, virtual, physical controlplane.Options) (*controlplane.Cluster, *controlplane.Cluster, error) {
	virtual.Name, physical.Name = "virtual", "physical"
	clusters, err := controlplane.StartParallel(ctx, virtual, physical)
	if err != nil {
		return nil, nil, fmt.Errorf("starting control planes: %w", err)
	}
	for _, c := range clusters {
		if err := InstallCRDs(ctx, c.Config()); err != nil {
			return nil, nil, fmt.Errorf("installing CRDs in %s: %w", c.Name, err)
		}
	}
	return clusters[0], clusters[1], nil
}

// Main is the TestMain of a package whose tests share a virtual and a
// physical cluster: it starts them, hands them to ready, runs the tests and
// stops the clusters. Use it as os.Exit(testenv.Main(m, ...)).
func Main(m *testing.M, virtual, physical controlplane.Options, ready func(virtual, physical *controlplane.Cluster)) int {
	defer controlplane.StopAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	v, p, err := StartVirtualAndPhysical(ctx, virtual, physical)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ready(v, p)
	return m.Run()
}
