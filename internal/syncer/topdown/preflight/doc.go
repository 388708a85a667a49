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

// Package preflight judges a virtual pod before its physical pod is sent:
// the checks that refuse a pod for what it would bring to the physical
// cluster, and the memory of the pods refused.
//
// The pod controller runs Checks.First in create before it makes anything
// of the pod (mapping, token Secret, copies). The list is built by the
// controller in this order, and the order is part of the behaviour: a pod
// refused for two reasons shows the first.
//
//  1. DaemonSetPods: a DaemonSet's pod, unless the syncer runs them. Judged
//     again on every pass (it costs nothing).
//  2. VolumeSources: a claim bound to a PersistentVolume whose source the
//     lender does not allow.
//  3. PodSecurity: a break of the Pod Security level the mount namespace
//     enforces, judged on the volumes the physical node would mount.
//  4. AllowedSpec: a runtime class the lender does not allow, or a
//     projected volume source Kubeocean cannot serve.
//  5. HostPorts: a host port taken on the physical node by a pod the
//     binding does not run; the pod waits for the port (Memory).
//
// A refused pod is remembered with its version (Memory), so that it is
// not sent again as it is; a change of the pod, of the mount namespace's
// labels or quotas, of the lender's allowances, or a host port freed sends
// it again.
package preflight
