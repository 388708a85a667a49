// Package manager wires kubeocean-manager: the ClusterBinding controller
// and the syncers it runs, in the mode --syncer-mode selects, on informers
// of the virtual cluster. cmd/kubeocean-manager runs Setup with app.Run,
// which adds leader election (Lease kubeocean-manager), metrics, health
// probes and graceful shutdown.
package manager
