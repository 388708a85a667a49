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

// Package unbind is the syncer's side of unbinding. While its binding
// lives, it keeps the syncer's finalizer on the ClusterBinding. Once the
// binding is deleted, the other controllers wind down on their own (the
// node controller drains and removes the virtual nodes, the top-down
// controllers delete physical pods and copies as their virtual objects go);
// this controller waits for that, releases the reclaim finalizer of the
// binding's ResourceLeasingPolicies that no other binding may rely on
// (those pinned to its mount namespace, and deleted ones; a live policy
// shared by name keeps it), sweeps what is left of the binding in both
// clusters, and then removes the finalizer so the manager can finish.
//
// The sweep never deletes a volume's data unless the binding carries
// kubeocean.io/delete-volumes=true: a provisioned volume's PV is set to
// Retain before its holder claim goes, and is listed in the
// VolumesRetained event; a copied PV, always Retain, is set back to
// Retain before it goes.
package unbind
