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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

const (
	// outagePods is the batch each outage test adds, part of it still
	// being synced when the outage begins.
	outagePods = 80
	// apiserverDowntime is how long a killed apiserver stays down.
	apiserverDowntime = 10 * time.Second
	// freezeTime is how long the physical apiserver is frozen: longer
	// than a node Lease (40 s, kwok's and the virtual nodes'), and long
	// enough for the virtual nodes to go Unknown (renewals stop within
	// two probes, ~10 s, then nodeMonitorGracePeriod).
	freezeTime = 45 * time.Second
	// unknownDeadline bounds the wait for the virtual nodes to go Unknown
	// during the freeze.
	unknownDeadline = 60 * time.Second
)

// TestVirtualAPIServerRestart kills the virtual apiserver while the syncer
// process creates a batch of pods, keeps it down, and starts it again:
// nothing is deleted on either side, the syncer keeps running, and the
// clusters agree exactly afterwards.
func TestVirtualAPIServerRestart(t *testing.T) {
	restartAPIServer(t, "virtual-restart", env.virtual, false)
}

// TestPhysicalAPIServerRestart is TestVirtualAPIServerRestart for the
// physical apiserver, with more pods placed in the virtual cluster while
// it is down.
func TestPhysicalAPIServerRestart(t *testing.T) {
	restartAPIServer(t, "physical-restart", env.physical, true)
}

func restartAPIServer(t *testing.T, namespace string, cluster *controlplane.Cluster, createDuring bool) {
	deletionsBefore := env.deletions.count()
	// The batch is there before the syncer starts, so that the apiserver is
	// killed while the syncer is busy with it.
	before := virtualPodCount(t)
	createNamespace(t, namespace)
	createPods(t, namespace, namespace, outagePods)
	total := before + outagePods
	syncer := startSyncer(t, namespace)
	atStop := waitPhysicalPods(t, before+outagePods/10)
	if err := cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	restarted := false
	t.Cleanup(func() {
		// A failed test must not leave the shared cluster without its apiserver.
		if !restarted {
			if err := cluster.StartAPIServer(context.Background()); err != nil {
				t.Errorf("starting the %s apiserver again: %v", cluster.Name, err)
			}
		}
	})
	t.Logf("%s apiserver killed with %d of %d physical pods made", cluster.Name, atStop, total)
	if atStop >= total {
		t.Logf("the batch was done before the kill: this run tests an outage at rest")
	}
	if createDuring {
		createPods(t, namespace, namespace+"-during", outagePods/5)
		total += outagePods / 5
	}
	time.Sleep(time.Until(stopped.Add(apiserverDowntime)))
	syncer.requireRunning(t)
	restarted = true
	if err := cluster.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	answering := time.Now()
	t.Logf("%s apiserver down %v, ready again", cluster.Name, answering.Sub(stopped).Round(100*time.Millisecond))
	took := waitConverged(t, "the clusters agree after the "+cluster.Name+" apiserver is back")
	syncer.requireRunning(t)
	got := checkExact(t, deletionsBefore, settle)
	if got != total {
		t.Errorf("%d virtual pods, want %d", got, total)
	}
	t.Logf("FIGURE %s: %d pods, exact on both sides %v after the %s apiserver answered again",
		t.Name(), got, took.Round(100*time.Millisecond), cluster.Name)
	syncer.Stop()
}

// TestPhysicalAPIServerFrozen freezes the physical apiserver (SIGSTOP) of
// a manager running the syncer in-process for longer than a node Lease,
// with pods placed meanwhile. As docs/operations.md ("When a cluster does
// not answer") says, the running syncer keeps the virtual nodes' Leases
// renewed from the last known state: the nodes stay Ready and are marked
// PhysicalClusterReachable=False instead. The manager is then killed and
// started again while the apiserver is still frozen: its new syncer cannot
// read the physical cluster, so it vouches for nothing and renews nothing,
// and the virtual cluster marks the nodes Unknown. Nothing is deleted on
// either side. Once the apiserver answers again the clusters agree
// exactly; the time that takes is printed (the target is 10 s).
func TestPhysicalAPIServerFrozen(t *testing.T) {
	namespace := "physical-freeze"
	deletionsBefore := env.deletions.count()
	started := time.Now()
	manager := startManager(t, namespace)
	waitConverged(t, "the pods of earlier tests agree before the freeze")
	// The pods agree without a syncer; a syncer still setting up when the
	// freeze begins is one that starts during the outage (checked later).
	waitLeasesRenewedAfter(t, started)
	before := checkExact(t, deletionsBefore, 0)
	createNamespace(t, namespace)

	resume, err := env.physical.PauseAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	t.Cleanup(resume)
	createPods(t, namespace, namespace, outagePods/2)
	total := before + outagePods/2

	nodes := virtualNodes()
	markedAfter := map[string]time.Duration{}
	// The marks are due ~10 s in (two probes); a loaded machine gets until
	// unknownDeadline. Ready stays True meanwhile.
	for len(markedAfter) < len(nodes) && time.Since(frozen) < unknownDeadline {
		for _, name := range nodes {
			node, err := env.virtualKube.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s := readyStatus(node); s != corev1.ConditionTrue {
				t.Fatalf("virtual node %s is Ready=%s %v into the freeze, before any restart", name, s, time.Since(frozen).Round(time.Second))
			}
			if _, seen := markedAfter[name]; !seen && outageMarked(node) {
				markedAfter[name] = time.Since(frozen)
			}
		}
		time.Sleep(time.Second)
	}
	for _, name := range nodes {
		after, seen := markedAfter[name]
		if !seen {
			t.Fatalf("virtual node %s was not marked unreachable in %v of a frozen physical apiserver", name, unknownDeadline)
		}
		t.Logf("virtual node %s marked unreachable %v into the freeze", name, after.Round(time.Second))
	}

	manager.kill(t)
	manager = startManager(t, namespace+"-2")
	restarted := time.Now()
	t.Logf("manager killed and started again %v into the freeze", restarted.Sub(frozen).Round(100*time.Millisecond))
	// Unknown is due within what is left of the Lease (up to 10 s) and the
	// grace period (20 s) of the restart.
	unknownAfter := map[string]time.Duration{}
	for len(unknownAfter) < len(nodes) && time.Since(restarted) < unknownDeadline {
		for _, name := range nodes {
			if _, seen := unknownAfter[name]; !seen && virtualNodeReady(t, name) == corev1.ConditionUnknown {
				unknownAfter[name] = time.Since(restarted)
			}
		}
		time.Sleep(time.Second)
	}
	for _, name := range nodes {
		after, seen := unknownAfter[name]
		if !seen {
			t.Fatalf("virtual node %s did not go Unknown in %v after a manager restart during the freeze (Ready=%s)", name, unknownDeadline, virtualNodeReady(t, name))
		}
		t.Logf("virtual node %s Unknown %v after the restart", name, after.Round(time.Second))
	}
	for time.Since(frozen) < freezeTime {
		for _, name := range nodes {
			if s := virtualNodeReady(t, name); s != corev1.ConditionUnknown {
				t.Errorf("virtual node %s is Ready=%s %v after a manager restart during the freeze", name, s, time.Since(restarted).Round(time.Second))
			}
		}
		time.Sleep(time.Second)
	}
	manager.requireRunning(t)

	resume()
	resumed := time.Now()
	// Where the time goes after the apiserver answers again: the virtual
	// nodes Ready, every physical twin made, every twin Running (kwok's
	// part), every virtual pod Running (the status copied back).
	milestones := []string{"virtual nodes Ready", "all physical twins made", "all physical twins Running", "all virtual pods Running"}
	reached := map[string]time.Duration{}
	poll(t, convergeTimeout, "the clusters agree after the freeze", func(ctx context.Context) (string, error) {
		p, err := measure(ctx)
		if err != nil {
			return "", err
		}
		for i, done := range []bool{p.nodesReady, p.physical == total, p.physicalRunning == total, p.virtualRunning == total} {
			if _, ok := reached[milestones[i]]; done && !ok {
				reached[milestones[i]] = time.Since(resumed)
			}
		}
		return disagreement(ctx)
	})
	converged := time.Since(resumed)
	var steps []string
	for _, m := range milestones {
		at, ok := reached[m]
		if !ok {
			// Reached between the last count and the final check.
			at = converged
		}
		steps = append(steps, fmt.Sprintf("%s %v", m, at.Round(100*time.Millisecond)))
	}
	manager.requireRunning(t)
	got := checkExact(t, deletionsBefore, settle)
	if got != total {
		t.Errorf("%d virtual pods, want %d", got, total)
	}
	t.Logf("FIGURE %s: frozen %v with %d pods placed meanwhile and the manager restarted; after it answered again: %s; %d pods exact on both sides in %v (target 10s)",
		t.Name(), resumed.Sub(frozen).Round(100*time.Millisecond), outagePods/2, strings.Join(steps, ", "), got, converged.Round(100*time.Millisecond))
	manager.Stop()
}

// progress is a count of how far the clusters are on their way to agree.
type progress struct {
	nodesReady                                bool
	physical, physicalRunning, virtualRunning int
}

func measure(ctx context.Context) (progress, error) {
	var p progress
	virtual, err := env.virtualKube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: podLabel})
	if err != nil {
		return p, err
	}
	physical, err := env.physicalKube.CoreV1().Pods(mountNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return p, err
	}
	for _, pod := range virtual.Items {
		if pod.Status.Phase == corev1.PodRunning {
			p.virtualRunning++
		}
	}
	p.physical = len(physical.Items)
	for _, pod := range physical.Items {
		if pod.Status.Phase == corev1.PodRunning {
			p.physicalRunning++
		}
	}
	p.nodesReady = true
	for _, name := range virtualNodes() {
		node, err := env.virtualKube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return p, err
		}
		p.nodesReady = p.nodesReady && readyStatus(node) == corev1.ConditionTrue
	}
	return p, nil
}

// virtualPodCount is the number of test pods in the virtual cluster.
func virtualPodCount(t *testing.T) int {
	t.Helper()
	pods, err := env.virtualKube.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{LabelSelector: podLabel})
	if err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

func virtualNodeReady(t *testing.T, name string) corev1.ConditionStatus {
	t.Helper()
	node, err := env.virtualKube.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("virtual node %s: %v", name, err)
	}
	return readyStatus(node)
}
