// Package integration tests Kubeocean's API and framework against real
// control planes: a virtual and a physical cluster, each an etcd and a
// kube-apiserver on loopback, shared by the tests of this package.
package integration

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
		controlplane.Options{Name: "virtual"},
		controlplane.Options{Name: "physical"},
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
