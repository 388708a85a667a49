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

// Package kubelet tests the kubelet API of virtual nodes on real clusters:
// the virtual apiserver reaches a virtual node's kubelet API in the syncer,
// which serves it through the physical apiserver from the physical node,
// whose kubelet API kwok serves (test/kwokkubelet: logs and attach from a
// file, exec as local commands, port-forward to a local echo server).
package kubelet

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/kwokkubelet"
	"github.com/kubeocean/kubeocean/test/testenv"
)

var virtualCluster, physicalCluster *controlplane.Cluster

// logLines are what kwok serves as every container's log.
var logLines = kwokkubelet.LogLines

// nodeIP is the address of the physical nodes (kwok's kubelet API) and of
// the syncer's kubelet API.
var nodeIP = kwokkubelet.Address()

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "kubeocean-kubelet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kwok, err := kwokkubelet.New(dir, physNode)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer kwok.Close()
	return testenv.Main(m, controlplane.Options{ControllerManager: true}, controlplane.Options{Kwok: true, KwokArgs: kwok.Args},
		func(v, p *controlplane.Cluster) { virtualCluster, physicalCluster = v, p })
}
