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
	"maps"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// killPods is how many pods each kill test adds. Enough that the process
// is killed with most of the batch still to do.
const killPods = 200

// TestSyncerKilledMidSync creates a batch of pods and kills the
// kubeocean-syncer process with SIGKILL twice while it creates their
// physical twins, starting it again each time: afterwards every virtual
// pod has exactly one running twin, there is no orphan, no pod is Failed,
// and no pod was deleted on either side. Each kill lands in the window
// between the physical create and the status write that records the
// mapping on the virtual pod for some pods; how many is logged, and a kill
// that hit none proves nothing about that window.
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
	caught := unmappedTwins(t)
	t.Logf("first SIGKILL sent at %d of %d physical pods; right after it, %d physical pods had no mapping on their virtual pod yet, %v after the batch began",
		atKill, total, len(caught), time.Since(created).Round(100*time.Millisecond))
	if atKill >= total {
		t.Fatalf("the batch was done before the kill: the test proves nothing")
	}
	second := start(t, namespace+"-2")
	atKill = waitPhysicalPods(t, before+killPods*3/5)
	second.kill(t)
	caughtAgain := unmappedTwins(t)
	t.Logf("second SIGKILL sent at %d of %d physical pods; right after it, %d physical pods had no mapping on their virtual pod yet", atKill, total, len(caughtAgain))
	hits := len(caught) + len(caughtAgain)
	maps.Copy(caught, caughtAgain)
	if len(caught) == 0 {
		t.Errorf("no kill landed between a physical create and the write of its mapping: the window is not proven")
	}

	third := start(t, namespace+"-3")
	took = waitConverged(t, "the clusters agree after the kills")
	third.requireRunning(t)
	got := checkExact(t, deletionsBefore, settle)
	if got != total {
		t.Errorf("%d virtual pods, want %d", got, total)
	}
	t.Logf("FIGURE %s: %d pods, exact on both sides %v after the last restart (%v after the batch began); the kills landed %d times between a pod's physical create and its mapping write, on %d different pods",
		t.Name(), got, took.Round(100*time.Millisecond), time.Since(created).Round(100*time.Millisecond), hits, len(caught))
	third.Stop()
}

// unmappedTwins returns the virtual pods (namespace/name) whose physical
// pod exists but which do not name it yet: made by the top-down side, with
// the bottom-up side's first status write, which records the mapping,
// still to come. Read right after a kill, they are the pods the kill
// caught in that window.
func unmappedTwins(t *testing.T) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	physical, err := env.physicalKube.CoreV1().Pods(mountNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	virtual, err := env.virtualKube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: podLabel})
	if err != nil {
		t.Fatal(err)
	}
	mapped := map[string]bool{}
	for _, v := range virtual.Items {
		if v.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] != "" {
			mapped[v.Namespace+"/"+v.Name] = true
		}
	}
	unmapped := map[string]bool{}
	for _, p := range physical.Items {
		key := p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace] + "/" + p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName]
		if !mapped[key] {
			unmapped[key] = true
		}
	}
	return unmapped
}
