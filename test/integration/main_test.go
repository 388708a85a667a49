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

	var err error
	virtualCluster, physicalCluster, err = testenv.StartVirtualAndPhysical(ctx, controlplane.Options{}, controlplane.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
