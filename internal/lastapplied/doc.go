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

// Package lastapplied is the three-way merge of string maps (labels,
// annotations) that Kubeocean's controllers use to keep the objects they
// write in step without fighting other writers: a controller records what
// it last wrote on the object itself, and on the next pass changes only
// the keys whose desired value changed since (or that it enforces) and
// removes only keys it wrote earlier and no longer wants. Keys that others
// put on the object are left alone. The top-down controllers merge the
// physical pods' and copies' metadata with it; the bottom-up node
// controller the virtual nodes' labels and annotations.
//
// Why not server-side apply. Its ownership rules are not the ones these
// writes need. Under server-side apply a key another writer changed
// becomes that writer's, and the next apply of the value the controller
// already had conflicts and fails the whole request unless forced; a
// forced apply takes every key back, so a label a physical cluster's
// webhook or operator set on a physical pod would be reverted on every
// pass instead of standing until the virtual pod itself changes that key.
// And the record of what a manager wrote lives in managedFields, which
// every informer of the syncer drops to save memory (pkg/informers): the
// controllers could not compute from their caches what they last wrote,
// where the last-applied annotation is read from the cached object itself,
// one string the pods of a workload share in the cache.
package lastapplied
