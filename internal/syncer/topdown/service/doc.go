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

// Package service is the top-down syncer's Service side (docs/networking.md):
// for every virtual Service that the binding's pods may reach (those of the
// namespaces that have pods on the binding and of the binding's
// spec.serviceNamespaces; never default/kubernetes, which the pods reach at
// the virtual apiserver's address) it keeps a mirror Service in the mount
// namespace, which selects only the binding's own physical pods of that
// namespace; for a virtual Service without a selector it writes the mirror's
// EndpointSlices from the virtual ones, keeping only the addresses the
// physical cluster can reach. Ready endpoints left out (pods on other
// bindings or on the virtual cluster's own nodes) give the virtual Service an
// EndpointsInOtherClusters event, once per change; those of networks the
// binding declares joined (spec.network) are written into the mirror's own
// EndpointSlices with their pod IPs instead (JoinedSlices). It also runs the binding's DNS server,
// kubeocean-dns, which answers the virtual names from the mirrors, and tells
// the pod controller (Network) the DNS Service's address and the mirrors of
// a namespace.
package service
