// Package kubeletapi serves the kubelet API of a binding's virtual nodes:
// the endpoints through which the virtual apiserver reaches a node for
// kubectl logs, exec, attach, port-forward and for metrics-server's stats.
// Each virtual node has a listener of its own (its port tells nodes apart,
// which stats need); every request is authenticated and authorized
// against the virtual cluster like a kubelet in webhook mode, resolved
// through the top-down pod mapping, and served through the physical
// apiserver with the syncer's identity.
package kubeletapi
