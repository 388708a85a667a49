/*
Copyright The Kubeocean Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
