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
