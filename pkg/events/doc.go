// Package events builds the event recorder each Kubeocean process uses to
// tell users, through `kubectl describe`, what happened to their objects.
//
// Not part of Kubeocean's library: this package is implementation, with no
// compatibility promise; it may change in any release. See docs/library.md.
package events
