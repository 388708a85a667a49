// Package app wires a Kubeocean binary in the order every one of them
// follows: flags → config → clients → metrics and health servers → leader
// election → the binary's controllers, started and stopped together. The
// binaries in cmd/ stay trivial: they parse flags and call Run with the
// function that builds their controllers.
package app
