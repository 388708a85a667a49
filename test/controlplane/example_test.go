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

package controlplane_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

// A test that needs a virtual and a physical cluster.
func ExampleStartParallelT() {
	var t testing.TB // the test's *testing.T
	clusters := controlplane.StartParallelT(t,
		controlplane.Options{Name: "virtual", ControllerManager: true, Scheduler: true},
		controlplane.Options{Name: "physical", Kwok: true},
	)
	virtual, physical := clusters[0], clusters[1]
	_ = virtual.Clientset()
	// A kubeconfig for a Secret that a ClusterBinding refers to.
	kubeconfig, err := physical.KubeconfigForServiceAccount(context.Background(), "kube-system", "kubeocean-syncer")
	if err != nil {
		t.Fatal(err)
	}
	_ = kubeconfig
}

// Clusters shared by all tests of a package are started in TestMain, which
// must stop them itself.
func ExampleStopAll() {
	var m *testing.M // TestMain's argument
	physical, err := controlplane.Start(context.Background(), controlplane.Options{Name: "physical", Kwok: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = physical
	code := m.Run()
	controlplane.StopAll()
	os.Exit(code)
}
