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

// Package bottomup tests the bottom-up half of the syncer on real clusters:
// a virtual cluster with kube-controller-manager (so node lifecycle is real)
// and a physical cluster whose nodes and pods are run by kwok. The clusters
// are shared by the tests of this package; each test uses its own binding,
// cluster ID and node names so tests do not see each other's objects.
package bottomup

import (
	"os"
	"testing"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

var virtualCluster, physicalCluster *controlplane.Cluster

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, controlplane.Options{ControllerManager: true}, controlplane.Options{Kwok: true},
		func(v, p *controlplane.Cluster) { virtualCluster, physicalCluster = v, p }))
}
