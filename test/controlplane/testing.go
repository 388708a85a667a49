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
	"sync"
	"testing"
)

// logTailLines is how much of each component's log a failed test prints.
const logTailLines = 50

// StartT starts a cluster for a test and fails the test if it cannot. The
// cluster is stopped when the test ends; if the test failed, the end of each
// component's log is printed first.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	cleanupT(t, c)
	return c
}

// StartParallel starts one cluster per Options concurrently, for instance a
// virtual and a physical cluster. If any fails, the others are stopped too.
func StartParallel(ctx context.Context, opts ...Options) ([]*Cluster, error) {
	clusters := make([]*Cluster, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i := range opts {
		wg.Go(func() { clusters[i], errs[i] = Start(ctx, opts[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clusters {
			if c != nil {
				c.Stop()
			}
		}
		return nil, err
	}
	return clusters, nil
}

// StartParallelT is StartParallel for a test, with StartT's cleanup.
func StartParallelT(t testing.TB, opts ...Options) []*Cluster {
	t.Helper()
	clusters, err := StartParallel(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		cleanupT(t, c)
	}
	return clusters
}

func cleanupT(t testing.TB, c *Cluster) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test failed; logs of cluster %s:\n%s", c.Name, c.LogTails(logTailLines))
		}
		c.Stop()
	})
}
