// Package syncer wires the syncer of one ClusterBinding: clients to the
// virtual and the physical cluster, scoped informers on both, and the
// bottom-up controllers, run together until the process stops.
//
// Not part of Kubeocean's library: this package is implementation, with no
// compatibility promise; it may change in any release. See docs/library.md.
package syncer
