// Package csinode runs the CSINode controller of one ClusterBinding's
// syncer. It mirrors the CSINode of every physical node that has a virtual
// node onto a CSINode named like the virtual node, so the virtual cluster's
// scheduler sees which CSI drivers a virtual node offers, with their
// topology keys and volume limits.
package csinode
