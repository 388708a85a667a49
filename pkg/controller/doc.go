// Package controller is Kubeocean's small controller framework on plain
// client-go. A controller supplies a name, a reconcile function over a typed
// key and the HasSynced of the informers it reads; the framework owns the
// named, rate-limited workqueue and the worker loop:
//
//	Get → per-item logger → reconcile → Forget, AddAfter or AddRateLimited → Done
//
// Run waits for the caches, runs the workers, and on cancel shuts the queue
// down and waits until the items in flight are finished. A panic in a
// reconcile is recovered, counted and retried like an error; it never takes
// the process down. Event-handler helpers turn informer events into keys,
// unwrapping tombstones and dropping resync no-ops.
package controller
