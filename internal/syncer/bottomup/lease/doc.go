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

// Package lease runs the node Lease controller of one ClusterBinding's
// syncer. For every virtual node of the binding it keeps a Lease in the
// virtual cluster's kube-node-lease namespace and renews it while the
// physical node behind the virtual node is Ready. The virtual cluster's
// node-lifecycle controller counts a renewed Lease as a heartbeat, so a
// virtual node stays healthy exactly as long as its physical node is, and
// goes Unknown (its pods then evicted) once the physical node is NotReady or
// gone, the way a node whose kubelet stopped does.
//
// While the physical apiserver does not answer, the Leases are still
// renewed from the physical nodes' last known state: an outage of the
// physical control plane is not a failure of its nodes, whose kubelets run
// their pods on (see renewsDuringOutage). Options.OutageRenewalLimit
// bounds that.
package lease
