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

// Package policy runs the ResourceLeasingPolicy controller of one
// ClusterBinding's syncer. It watches the policies of the physical cluster
// that lend to this binding (ownership.PolicyLendsTo: its name in
// spec.cluster, and its mount namespace in spec.mountNamespace when set),
// keeps their status (valid, active, the open time
// window and the next transition) and requeues each policy exactly at its
// next window boundary. Its finalizer holds a deleted policy until no virtual
// node of the binding names it any more, i.e. until the node controller has
// reclaimed what the policy lent.
package policy
