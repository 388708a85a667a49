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

// Package ownership tells the objects one binding's syncer made in the
// physical cluster from everyone else's: other bindings of the same or of
// another virtual cluster sharing that physical cluster (and even its mount
// namespace), and objects of older versions that carry no identity.
//
// Every physical object a syncer creates carries kubeocean.io/managed-by,
// kubeocean.io/cluster-id=<clusterID> and kubeocean.io/binding-uid=<UID of
// the ClusterBinding>. The cluster ID is readable but unique only within
// one virtual cluster; the binding's UID is unique everywhere and lives
// exactly as long as the binding, which is the unit of unbinding. So the
// UID decides ownership: informers select on it, and nothing is updated or
// deleted without it (or without a proof that a legacy object is ours, see
// Legacy).
package ownership
