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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

const (
	// evictAfter is the test pods' tolerationSeconds for the unreachable
	// and not-ready NoExecute taints: the eviction timeout, shortened
	// from the default 300 s.
	evictAfter = 5
	// longOutage is how long the physical apiserver is frozen: longer than
	// detecting the outage (two probes, 10 s), what is left of a Lease
	// (up to 10 s), the virtual controller-manager's
	// nodeMonitorGracePeriod (20 s) and evictAfter together, with room for
	// a loaded machine. Before the outage behaviour was chosen, the test
	// pods were evicted about 45 s in.
	longOutage = 60 * time.Second
)

// TestPhysicalOutageLongerThanEviction freezes the physical apiserver for
// longer than the virtual cluster's eviction timeout (node grace period
// plus the pods' tolerationSeconds) and checks the behaviour chosen in
// docs/operations.md ("When a cluster does not answer"): the syncer keeps
// the virtual nodes' Leases renewed from the last known state, so the
// virtual nodes stay Ready and no pod is evicted or deleted on either side;
// the operator sees each virtual node marked PhysicalClusterReachable=False
// with a NoSchedule kubeocean.io/physical-unreachable taint and a Warning
// event. Once the apiserver answers again the marks go, a Normal event
// says so, and the clusters agree exactly with every pod as before.
func TestPhysicalOutageLongerThanEviction(t *testing.T) {
	namespace := "long-outage"
	deletionsBefore := env.deletions.count()
	syncer := startSyncer(t, namespace)
	createNamespace(t, namespace)
	createShortTolerationPods(t, namespace, 6)
	waitConverged(t, "the clusters agree before the outage")
	total := checkExact(t, deletionsBefore, 0)
	nodes := virtualNodes()

	resume, err := env.physical.PauseAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	t.Cleanup(resume)
	marked := map[string]time.Duration{}
	for time.Since(frozen) < longOutage {
		for _, name := range nodes {
			node, err := env.virtualKube.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if s := readyStatus(node); s != corev1.ConditionTrue {
				t.Fatalf("virtual node %s is Ready=%s %v into the outage; want it kept Ready", name, s, time.Since(frozen).Round(time.Second))
			}
			if _, seen := marked[name]; !seen && outageMarked(node) {
				marked[name] = time.Since(frozen)
			}
		}
		time.Sleep(time.Second)
	}
	for _, name := range nodes {
		after, seen := marked[name]
		if !seen {
			t.Fatalf("virtual node %s never got %s=False and the %s taint in %v of outage", name,
				kubeoceanv1alpha1.NodeConditionPhysicalClusterReachable, kubeoceanv1alpha1.TaintPhysicalUnreachable, longOutage)
		}
		t.Logf("virtual node %s marked unreachable %v into the outage", name, after.Round(time.Second))
	}
	evicted, err := env.virtualKube.CoreV1().Pods(namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range evicted.Items {
		if pod.DeletionTimestamp != nil {
			t.Errorf("virtual pod %s is being deleted after %v of outage", pod.Name, longOutage)
		}
	}
	wantNodeEvents(t, nodes, kubeoceanv1alpha1.ReasonPhysicalAPIServerUnreachable)

	resume()
	resumed := time.Now()
	poll(t, convergeTimeout, "the outage marks go", func(ctx context.Context) (string, error) {
		for _, name := range nodes {
			node, err := env.virtualKube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			if outageMarked(node) || reachable(node) != corev1.ConditionTrue {
				return fmt.Sprintf("node %s still marked (%s=%s)", name, kubeoceanv1alpha1.NodeConditionPhysicalClusterReachable, reachable(node)), nil
			}
		}
		return "", nil
	})
	cleared := time.Since(resumed)
	waitConverged(t, "the clusters agree after the outage")
	syncer.requireRunning(t)
	if got := checkExact(t, deletionsBefore, settle); got != total {
		t.Errorf("%d virtual pods, want %d", got, total)
	}
	wantNodeEvents(t, nodes, kubeoceanv1alpha1.ReasonPhysicalAPIServerAnswers)
	t.Logf("FIGURE %s: physical apiserver frozen %v (eviction due after ~%ds), nothing evicted or deleted; marks gone %v after it answered",
		t.Name(), resumed.Sub(frozen).Round(100*time.Millisecond), 40+evictAfter, cleared.Round(100*time.Millisecond))
	// The later tests let the virtual nodes go Unknown on purpose, which
	// would evict these pods in their time: remove them while this test's
	// syncer still runs to delete their twins.
	removePods(t, namespace)
	syncer.Stop()
}

// removePods deletes the virtual pods of namespace and waits until they and
// their physical twins are gone.
func removePods(t *testing.T, namespace string) {
	t.Helper()
	if err := env.virtualKube.CoreV1().Pods(namespace).DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, convergeTimeout, "the pods of "+namespace+" and their twins are gone", func(ctx context.Context) (string, error) {
		pods, err := env.virtualKube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return "", err
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Sprintf("%d virtual pods left", n), nil
		}
		return disagreement(ctx)
	})
}

// createShortTolerationPods is createPods with pods that tolerate an
// unreachable or not-ready node for evictAfter seconds only.
func createShortTolerationPods(t *testing.T, namespace string, n int) {
	t.Helper()
	nodes := virtualNodes()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-%03d", namespace, i), Labels: map[string]string{podLabel: namespace}},
				Spec: corev1.PodSpec{
					NodeName: nodes[i%len(nodes)],
					Tolerations: []corev1.Toleration{
						{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists},
						{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](evictAfter)},
						{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](evictAfter)},
					},
					Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
				},
			}
			if _, err := env.virtualKube.CoreV1().Pods(namespace).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// outageMarked tells whether node carries both outage marks.
func outageMarked(node *corev1.Node) bool {
	tainted := false
	for _, taint := range node.Spec.Taints {
		if taint.Key == kubeoceanv1alpha1.TaintPhysicalUnreachable && taint.Effect == corev1.TaintEffectNoSchedule {
			tainted = true
		}
	}
	return tainted && reachable(node) == corev1.ConditionFalse
}

func reachable(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if string(c.Type) == kubeoceanv1alpha1.NodeConditionPhysicalClusterReachable {
			return c.Status
		}
	}
	return "absent"
}

// wantNodeEvents checks that every node has an event with reason (events
// are written asynchronously, so it waits a little).
func wantNodeEvents(t *testing.T, nodes []string, reason string) {
	t.Helper()
	poll(t, 15*time.Second, "events "+reason+" on the virtual nodes", func(ctx context.Context) (string, error) {
		var missing []string
		for _, name := range nodes {
			events, err := env.virtualKube.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
				"involvedObject.kind": "Node", "involvedObject.name": name, "reason": reason}.String()})
			if err != nil {
				return "", err
			}
			if len(events.Items) == 0 {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return "none on " + strings.Join(missing, ", "), nil
		}
		return "", nil
	})
}

// waitLeasesRenewedAfter waits until every virtual node's Lease was renewed
// after since: a syncer started then runs its controllers.
func waitLeasesRenewedAfter(t *testing.T, since time.Time) {
	t.Helper()
	poll(t, convergeTimeout, "the virtual nodes' Leases renewed by the new syncer", func(ctx context.Context) (string, error) {
		for _, name := range virtualNodes() {
			lease, err := env.virtualKube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return "", err
			}
			if renewed := lease.Spec.RenewTime; renewed == nil || !renewed.After(since) {
				return fmt.Sprintf("lease %s last renewed %v", name, renewed), nil
			}
		}
		return "", nil
	})
}
