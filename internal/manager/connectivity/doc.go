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
