// Package events is the bottom-up syncer's event controller: what happens
// to the binding's pods and lent nodes in the physical cluster (the
// kubelet's Pulling, Failed, BackOff, Unhealthy; a node's NodeNotReady)
// is recorded on their virtual pods and nodes, where `kubectl describe`
// shows it, with the physical names rewritten to the virtual ones and the
// virtual apiserver's writes bounded by token buckets (docs/events.md).
package events
