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

package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"
)

// leaderPods is the batch the leader is killed in the middle of.
const leaderPods = 120

// electionArgs make a handover take seconds rather than the default 15 s.
var electionArgs = []string{
	"--leader-elect",
	"--leader-elect-lease-duration=6s",
	"--leader-elect-renew-deadline=4s",
	"--leader-elect-retry-period=1s",
}

// TestLeaderHandover runs two kubeocean-manager replicas with leader
// election. While the leader syncs, the standby provably does nothing: its
// own count of API requests (kubeocean_client_requests_total) holds only
// reads of the election Lease, none to the physical cluster. The leader is
// then killed with SIGKILL in the middle of a batch; the standby takes
// over, and the clusters agree exactly, with no pod deleted.
func TestLeaderHandover(t *testing.T) {
	namespace := "leader-handover"
	deletionsBefore := env.deletions.count()
	// One after the other, so the standby finds the Lease held and never
	// even tries to create it.
	leader := startManager(t, namespace+"-a", electionArgs...)
	waitLeading(t, leader)
	standby := startManager(t, namespace+"-b", electionArgs...)
	waitConverged(t, "the pods of earlier tests agree under the leader")
	before := checkExact(t, deletionsBefore, 0)

	// Work for the leader while the standby stands by.
	createNamespace(t, namespace)
	createPods(t, namespace, namespace+"-first", leaderPods/4)
	waitConverged(t, "the leader syncs a batch")
	if leading, err := leads(t.Context(), standby); err != nil || leading {
		t.Fatalf("%v: %s leads as well as %s", err, standby.name, leader.name)
	}
	standbyRequests := requestsByKind(t, standby)
	leaderRequests := requestsByKind(t, leader)
	t.Logf("requests of the leader %s: %s", leader.name, describeRequests(leaderRequests))
	t.Logf("requests of the standby %s: %s", standby.name, describeRequests(standbyRequests))
	// Besides reading the Lease, a standby makes one request: the GET
	// /version with which every binary waits, at start-up, for its API
	// server to answer (internal/app).
	startup := map[string]float64{"virtual get nonresource": 1}
	for kind, n := range standbyRequests {
		if kind != "virtual get leases" && n > startup[kind] {
			t.Errorf("the standby sent %v requests %q", n, kind)
		}
	}
	// The counter works: the standby polls the Lease, and the leader's
	// work shows in its own count.
	if standbyRequests["virtual get leases"] == 0 {
		t.Errorf("the standby's request count holds no read of the Lease: the check proves nothing")
	}
	if leaderRequests["physical create pods"] < leaderPods/4 {
		t.Errorf("the leader created %v physical pods, want at least %d", leaderRequests["physical create pods"], leaderPods/4)
	}

	createPods(t, namespace, namespace+"-second", leaderPods)
	total := before + leaderPods/4 + leaderPods
	atKill := waitPhysicalPods(t, before+leaderPods/4+leaderPods/5)
	leader.kill(t)
	killed := time.Now()
	t.Logf("leader %s killed with %d of %d physical pods made", leader.name, atKill, total)
	if atKill >= total {
		t.Fatalf("the batch was done before the kill: the test proves nothing")
	}
	waitLeading(t, standby)
	tookOver := time.Since(killed)
	waitConverged(t, "the clusters agree under the new leader")
	converged := time.Since(killed)
	standby.requireRunning(t)
	got := checkExact(t, deletionsBefore, settle)
	if got != total {
		t.Errorf("%d virtual pods, want %d", got, total)
	}
	t.Logf("FIGURE %s: %s leads %v after the leader's SIGKILL; %d pods exact on both sides %v after it",
		t.Name(), standby.name, tookOver.Round(100*time.Millisecond), got, converged.Round(100*time.Millisecond))
	standby.Stop()
}

// leads reports whether the manager holds the Lease, from its
// leader_election_master_status.
func leads(ctx context.Context, b *binary) (bool, error) {
	samples, err := b.scrape(ctx, "leader_election_master_status")
	if err != nil {
		return false, err
	}
	for _, s := range samples {
		if s.labels["name"] == "kubeocean-manager" && s.value == 1 {
			return true, nil
		}
	}
	return false, nil
}

func waitLeading(t *testing.T, b *binary) {
	t.Helper()
	poll(t, time.Minute, b.name+" leads", func(ctx context.Context) (string, error) {
		if exited, err := b.Exited(); exited {
			t.Fatalf("%s exited (%v); last lines:\n%s", b.name, err, b.Tail(40))
		}
		leading, err := leads(ctx, b)
		if err != nil || leading {
			return "", err
		}
		return "not leading", nil
	})
}

// requestsByKind sums the binary's kubeocean_client_requests_total by
// "cluster verb resource".
func requestsByKind(t *testing.T, b *binary) map[string]float64 {
	t.Helper()
	samples, err := b.scrape(t.Context(), "kubeocean_client_requests_total")
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]float64{}
	for _, s := range samples {
		if s.value > 0 {
			byKind[fmt.Sprintf("%s %s %s", s.labels["cluster"], s.labels["verb"], s.labels["resource"])] += s.value
		}
	}
	return byKind
}

func describeRequests(byKind map[string]float64) string {
	kinds := make([]string, 0, len(byKind))
	for kind, n := range byKind {
		kinds = append(kinds, fmt.Sprintf("%s=%v", kind, n))
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ")
}
