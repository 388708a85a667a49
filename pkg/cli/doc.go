// Package cli is the kubeocean command line: binding a physical cluster in
// one command, unbinding it, and the status of every binding. Installed as
// kubectl-kubeocean it is also `kubectl kubeocean`.
//
// Not part of Kubeocean's library: this package is implementation, with no
// compatibility promise; it may change in any release. See docs/library.md.
package cli
