// Package connectivity checks what the manager must know before it runs a
// ClusterBinding's syncer: that the kubeconfig Secret can be read and
// parsed, that the physical cluster answers within a deadline, and that the
// credentials may do what the syncer does there. Clients are cached per
// Secret (remotecluster.Cache: rebuilt when the kubeconfig changes or the
// entry ages), each with its own rate limit.
//
// A failure says whether retrying can help: a missing Secret or a broken
// kubeconfig cannot be fixed by waiting (Permanent), an unreachable server or
// missing permissions can (the caller retries with backoff).
package connectivity
