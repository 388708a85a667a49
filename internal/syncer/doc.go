// Package syncer wires the syncer of one ClusterBinding: clients to the
// virtual and the physical cluster, scoped informers on both, and the
// bottom-up controllers, run together until the process stops.
package syncer
