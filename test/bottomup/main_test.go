// Package bottomup tests the bottom-up half of the syncer on real clusters:
// a virtual cluster with kube-controller-manager (so node lifecycle is real)
// and a physical cluster whose nodes and pods are run by kwok. The clusters
// are shared by the tests of this package; each test uses its own binding,
// cluster ID and node names so tests do not see each other's objects.
package bottomup

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

	clusters, err := controlplane.StartParallel(ctx,
		controlplane.Options{Name: "virtual", ControllerManager: true},
		controlplane.Options{Name: "physical", Kwok: true},
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting control planes: %v\n", err)
		return 1
	}
	virtualCluster, physicalCluster = clusters[0], clusters[1]
	for _, c := range clusters {
		if err := testenv.InstallCRDs(ctx, c.Config()); err != nil {
			fmt.Fprintf(os.Stderr, "installing CRDs in %s: %v\n", c.Name, err)
			return 1
		}
	}
	return m.Run()
}
