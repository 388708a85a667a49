// Package policy runs the ResourceLeasingPolicy controller of one
// ClusterBinding's syncer. It watches the policies of the physical cluster
// that lend to this binding (ownership.PolicyLendsTo: its name in
// spec.cluster, and its mount namespace in spec.mountNamespace when set),
// keeps their status (valid, active, the open time
// window and the next transition) and requeues each policy exactly at its
// next window boundary. Its finalizer holds a deleted policy until no virtual
// node of the binding names it any more, i.e. until the node controller has
// reclaimed what the policy lent.
package policy
