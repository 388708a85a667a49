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
	"testing"
	"time"
)

// killPods is how many pods each kill test adds. Enough that the process
// is killed with most of the batch still to do.
const killPods = 200

// TestSyncerKilledMidSync creates a batch of pods and kills the
// kubeocean-syncer process with SIGKILL twice while it creates their
// physical twins, starting it again each time: afterwards every virtual
// pod has exactly one running twin, there is no orphan, and no pod was
// deleted on either side.
func TestSyncerKilledMidSync(t *testing.T) {
	killMidSync(t, "syncer-kill", func(t *testing.T, name string) *binary { return startSyncer(t, name) })
}

// TestManagerKilledMidSync is TestSyncerKilledMidSync for a
// kubeocean-manager that runs the binding's syncer in its own process.
func TestManagerKilledMidSync(t *testing.T) {
	killMidSync(t, "manager-kill", func(t *testing.T, name string) *binary { return startManager(t, name) })
}

func killMidSync(t *testing.T, namespace string, start func(t *testing.T, name string) *binary) {
	deletionsBefore := env.deletions.count()
	first := start(t, namespace+"-1")
	// Pods of earlier tests are adopted, not made again.
	took := waitConverged(t, "the pods of earlier tests agree before the batch")
	before := checkExact(t, deletionsBefore, 0)
	t.Logf("%d pods from earlier tests in step %v after the start", before, took.Round(100*time.Millisecond))

	createNamespace(t, namespace)
	created := time.Now()
	createPods(t, namespace, namespace, killPods)
	total := before + killPods

	// Kill at about a fifth and at about three fifths of the batch.
	atKill := waitPhysicalPods(t, before+killPods/5)
	first.kill(t)
	t.Logf("first SIGKILL with %d of %d physical pods made, %v after the batch began", atKill, total, time.Since(created).Round(100*time.Millisecond))
	if atKill >= total {
		t.Fatalf("the batch was done before the kill: the test proves nothing")
	}
	second := start(t, namespace+"-2")
	atKill = waitPhysicalPods(t, before+killPods*3/5)
	second.kill(t)
	t.Logf("second SIGKILL with %d of %d physical pods made", atKill, total)

	third := start(t, namespace+"-3")
	took = waitConverged(t, "the clusters agree after the kills")
	third.requireRunning(t)
	got := checkExact(t, deletionsBefore, settle)
	if got != total {
		t.Errorf("%d virtual pods, want %d", got, total)
	}
	t.Logf("FIGURE %s: %d pods, exact on both sides %v after the last restart (%v after the batch began)",
		t.Name(), got, took.Round(100*time.Millisecond), time.Since(created).Round(100*time.Millisecond))
	third.Stop()
}
