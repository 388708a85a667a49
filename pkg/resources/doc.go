// Package resources does the capacity arithmetic of virtual nodes: what a
// physical pod holds on its node, as the scheduler counts it, and how much of
// a node a ResourceLeasingPolicy lends.
//
// Not part of Kubeocean's library: this package is implementation, with no
// compatibility promise; it may change in any release. See docs/library.md.
package resources
