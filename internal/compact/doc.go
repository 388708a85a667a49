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

// Package compact holds the syncer's memory engineering in one place: the
// informer transforms that decide what its caches keep of each kind, the
// records some caches keep in place of API objects, the interning and value
// sharing they are built on, and the lean writes that ask the API server to
// answer with metadata only. docs/caches.md says, per cached kind, what is
// kept, who reads what, the aliasing rules and what each trick buys, with
// the benchmark that shows it.
//
// Two forms of cached object, and one rule. A transform either keeps an API
// type (a *corev1.Pod or *corev1.Node, whole or with fields dropped) whose
// repeating strings, maps and parts are shared with other objects
// (Transforms.Pods, Transforms.Owned, PhysicalNode), or makes a record. The
// rule for both: what a cache holds is shared, with other cached objects
// too, and read only; a DeepCopy separates it.
//
// The record style. A record is a struct named for what it holds, made by
// one function from the decoded object in the informer's transform, with
// exported fields for what its readers read and nothing else. Its metadata
// is ObjectMeta embedded whole when it keeps all of it (PhysicalPod), or
// Unkept embedded first plus the getters of what it keeps (PodUsage, and
// topdown/pod's TokenSecretRecord). It implements runtime.Object with an
// empty kind, being only ever cached, never sent, and a DeepCopyObject that
// shares only what is immutable. Readers take the record by its type
// (controller.Unwrap[*PodUsage]); the one exception is PhysicalPod, which
// PhysicalPods shows as Pods to the controllers written for Pods, and whose
// wrapper a test holds to client-go's informer interface
// (physicalinformer_test.go).
package compact
