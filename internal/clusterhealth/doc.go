// Package clusterhealth tells whether an apiserver answers, and keeps the
// informers of a cluster that stopped answering from backing off.
//
// A Prober asks an apiserver's /readyz at a steady period and reports
// whether it answered lately; the node Lease controller renews heartbeats
// only while the physical cluster answers, so a virtual node's health
// follows what the syncer knows of its physical cluster, whether or not
// the syncer restarted during an outage.
//
// WaitForAnswer wraps the transport of the clients that informers list and
// watch with: a list or watch that cannot reach the apiserver waits for it,
// polling every second, instead of failing. client-go's reflector backs off
// up to 30 s (jittered to 60 s) after failed lists and watches, and that
// backoff cannot be configured through the shared informer factories; a
// request that waits instead keeps it from growing, so informers resume
// within a second of the apiserver answering again.
package clusterhealth
