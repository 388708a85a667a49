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
