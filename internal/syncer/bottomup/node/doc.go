// Package node is the physical node controller of the bottom-up syncer: for
// each physical node the binding selects and a ResourceLeasingPolicy lends,
// it keeps a virtual node whose capacity is what the node's own workloads
// leave free, capped by the policy, with the policy's time windows turned
// into taints; a node no longer lent is drained and removed.
package node
