// Package topdown tests the top-down half of the syncer on real clusters: a
// virtual cluster with kube-controller-manager and kube-scheduler, and a
// physical cluster whose nodes and pods are run by kwok. The clusters are
// shared by the tests of this package; each test uses its own binding,
// cluster ID, namespaces and nodes.
package topdown

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

var virtualCluster, physicalCluster *controlplane.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	defer controlplane.StopAll()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var err error
	virtualCluster, physicalCluster, err = testenv.StartVirtualAndPhysical(ctx,
		controlplane.Options{ControllerManager: true, Scheduler: true}, controlplane.Options{Kwok: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
