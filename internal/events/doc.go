// Package events builds the event recorder each Kubeocean process uses to
// tell users, through `kubectl describe`, what happened to their objects.
package events
