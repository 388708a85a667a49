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

// Package node is the physical node controller of the bottom-up syncer: for
// each physical node the binding selects and a ResourceLeasingPolicy lends,
// it keeps a virtual node whose capacity is what the node's own workloads
// leave free, capped by the policy, with the policy's time windows turned
// into taints; a node no longer lent is drained and removed.
package node
