// Package cli is the kubeocean command line: binding a physical cluster in
// one command, unbinding it, and the status of every binding. Installed as
// kubectl-kubeocean it is also `kubectl kubeocean`.
package cli
