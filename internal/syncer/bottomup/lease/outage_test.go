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

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestRenewsDuringOutage(t *testing.T) {
	last := testStart
	cases := []struct {
		name    string
		answers bool
		silent  time.Duration
		limit   time.Duration
		want    bool
	}{
		{"answering", true, 0, 0, true},
		{"answering, long after an old answer (the prober decides)", true, time.Hour, time.Minute, true},
		{"silent, no limit", false, 24 * time.Hour, 0, true},
		{"silent within the limit", false, 59 * time.Second, time.Minute, true},
		{"silent for exactly the limit", false, time.Minute, time.Minute, false},
		{"silent past the limit", false, time.Hour, time.Minute, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := renewsDuringOutage(tc.answers, last, last.Add(tc.silent), tc.limit); got != tc.want {
				t.Errorf("renewsDuringOutage(%v, silent %v, limit %v) = %v, want %v", tc.answers, tc.silent, tc.limit, got, tc.want)
			}
		})
	}
}

// While the physical apiserver does not answer, a physical node last seen
// Ready keeps its virtual node's Lease renewed, on the usual schedule: an
// outage of the physical control plane is not a failure of its nodes, and
// the virtual cluster must not evict pods that run on. A node last seen
// NotReady still gets none.
func TestRenewsFromTheLastKnownStateWhileThePhysicalClusterDoesNotAnswer(t *testing.T) {
	f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionTrue),
		ourLease(virtualName, testStart.Add(-time.Minute)))
	f.physicalDown = true
	result, writes, err := f.reconcile(virtualName)
	if err != nil || len(writes) != 1 || writes[0].GetVerb() != "update" {
		t.Fatalf("outage: err %v, writes %v; want one renewal", err, writes)
	}
	if result.RequeueAfter != DefaultRenewInterval {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, DefaultRenewInterval)
	}
	if got := f.lease(virtualName).Spec.RenewTime; got == nil || !got.Time.Equal(testStart) {
		t.Errorf("renewTime = %v, want %v", got, testStart)
	}

	notReady := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionFalse),
		ourLease(virtualName, testStart.Add(-time.Minute)))
	notReady.physicalDown = true
	if _, writes, err := notReady.reconcile(virtualName); err != nil || len(writes) != 0 {
		t.Fatalf("outage, node last seen NotReady: err %v, writes %v; want none", err, writes)
	}
}

// With an OutageRenewalLimit, renewals go on until the physical apiserver
// has been silent that long, then stop (the virtual cluster's node
// lifecycle takes its course) and resume as soon as it answers again (the
// prober enqueues every Lease).
func TestOutageRenewalLimitStopsRenewals(t *testing.T) {
	f := newFixture(t, virtualNode(virtualName, "worker-1"), physicalNode("worker-1", corev1.ConditionTrue),
		ourLease(virtualName, testStart.Add(-time.Minute)))
	f.physicalDown = true
	f.c.outageLimit = 5 * time.Minute
	f.c.lastAnswer = func() time.Time { return testStart.Add(-4 * time.Minute) }
	if _, writes, err := f.reconcile(virtualName); err != nil || len(writes) != 1 {
		t.Fatalf("silent 4m of 5m: err %v, writes %v; want one renewal", err, writes)
	}

	f.clock.Step(time.Minute)
	result, writes, err := f.reconcile(virtualName)
	if err != nil || len(writes) != 0 || result.RequeueAfter != 0 {
		t.Fatalf("silent 5m of 5m: result %+v, err %v, writes %v; want nothing", result, err, writes)
	}

	f.physicalDown = false
	f.c.EnqueueAll()
	if n := f.c.Len(); n != 1 {
		t.Fatalf("EnqueueAll queued %d keys, want the one virtual node", n)
	}
	result, writes, err = f.reconcile(virtualName)
	if err != nil || len(writes) != 1 || writes[0].GetVerb() != "update" {
		t.Fatalf("answers again: err %v, writes %v; want one renewal", err, writes)
	}
	if result.RequeueAfter != DefaultRenewInterval {
		t.Errorf("RequeueAfter = %v, want %v", result.RequeueAfter, DefaultRenewInterval)
	}
}

func TestOutageRenewalLimitNeedsLastAnswer(t *testing.T) {
	opts := Options{OutageRenewalLimit: time.Minute}
	if err := opts.defaultAndValidate(); err == nil {
		t.Error("OutageRenewalLimit without PhysicalLastAnswer was accepted")
	}
}
