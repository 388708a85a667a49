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

// Package integration tests Kubeocean's API and framework against real
// control planes: a virtual and a physical cluster, each an etcd and a
// kube-apiserver on loopback, shared by the tests of this package.
package integration

import (
	"os"
	"testing"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

var virtualCluster, physicalCluster *controlplane.Cluster

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, controlplane.Options{}, controlplane.Options{},
		func(v, p *controlplane.Cluster) { virtualCluster, physicalCluster = v, p }))
}
