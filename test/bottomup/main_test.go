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
