package testenv

import (
	"context"
	"fmt"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

// StartVirtualAndPhysical starts a virtual and a physical cluster at once
// and installs Kubeocean's CRDs in both, for a package's TestMain; stop them
// with controlplane.StopAll.
func StartVirtualAndPhysical(ctx context.Context, virtual, physical controlplane.Options) (*controlplane.Cluster, *controlplane.Cluster, error) {
	virtual.Name, physical.Name = "virtual", "physical"
	clusters, err := controlplane.StartParallel(ctx, virtual, physical)
	if err != nil {
		return nil, nil, fmt.Errorf("starting control planes: %w", err)
	}
	for _, c := range clusters {
		if err := InstallCRDs(ctx, c.Config()); err != nil {
			return nil, nil, fmt.Errorf("installing CRDs in %s: %w", c.Name, err)
		}
	}
	return clusters[0], clusters[1], nil
}
