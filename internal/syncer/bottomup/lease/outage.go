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

package lease

import "time"

// renewsDuringOutage tells whether Leases are still renewed, from the last
// state seen of the physical nodes, when the physical apiserver last
// answered at lastAnswer.
//
// A physical control plane that does not answer says nothing about the
// physical nodes: their kubelets keep running their pods without it, as
// Kubernetes' own nodes do while their control plane is down. Letting the
// Leases expire would turn that outage into virtual nodes that look dead,
// and the virtual cluster would evict every pod on them after its
// tolerationSeconds (300 s by default), although the physical pods run on;
// their healthy physical twins would then be deleted once the physical
// cluster answers. So the syncer keeps the last known state: it renews as
// long as the physical node was Ready when last seen, and the node
// controller marks the virtual node (condition, NoSchedule taint) instead.
//
// limit bounds that, for operators who would rather have workloads
// rescheduled after a long outage: once the apiserver has been silent for
// limit, renewals stop and the virtual cluster's node lifecycle takes its
// course. Zero means no bound.
func renewsDuringOutage(answers bool, lastAnswer, now time.Time, limit time.Duration) bool {
	if answers || limit <= 0 {
		return true
	}
	return now.Sub(lastAnswer) < limit
}
