// Package capacity does the capacity arithmetic of virtual nodes: what a
// physical pod holds on its node, as the scheduler counts it, and how much of
// a node a ResourceLeasingPolicy lends.
package capacity
