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

package bottomup

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/internal/ownership"
	"github.com/kubeocean/kubeocean/internal/syncer"
	physicalevents "github.com/kubeocean/kubeocean/internal/syncer/bottomup/events"
	"github.com/kubeocean/kubeocean/pkg/informers"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// eventsWorld is a binding lending one kwok node, with the virtual pods
// the tests record events on.
type eventsWorld struct {
	*testenv.SyncerWorld
	node, namespace string
}

func startEventsWorld(t *testing.T, binding string) *eventsWorld {
	t.Helper()
	w := &eventsWorld{SyncerWorld: startSyncer(t, binding, "cls-"+binding), node: binding + "-node", namespace: binding + "-apps"}
	w.LendNode(t, testenv.KwokNode(w.node, "8", "16Gi", map[string]string{"suite": binding}))
	w.WaitCPU(t, w.node, "8")
	testenv.CreateNamespace(t, w.Virtual, w.namespace)
	return w
}

// runPod runs a virtual pod on the lent node and returns its physical twin.
func (w *eventsWorld) runPod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	waitPodRunning(t, w.SyncerWorld, w.namespace, name, w.VirtualNode(w.node))
	p, err := w.Physical.CoreV1().Pods(w.Mount).Get(t.Context(), kubeoceanv1alpha1.PhysicalName(w.namespace, name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeletEvent writes an event in the physical cluster as the kubelet of
// the pod's node records one.
func kubeletEvent(t *testing.T, kube kubernetes.Interface, pod *corev1.Pod, name, reason, message string) *corev1.Event {
	t.Helper()
	now := metav1.Now()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			FieldPath: "spec.containers{app}"},
		Type: corev1.EventTypeWarning, Reason: reason, Message: message,
		Source:         corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	created, err := kube.CoreV1().Events(pod.Namespace).Create(t.Context(), e, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// virtualEvents are the events of the virtual pod or node named name.
func virtualEvents(ctx context.Context, kube kubernetes.Interface, namespace, kind, name string) ([]corev1.Event, error) {
	list, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=" + kind + ",involvedObject.name=" + name,
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitVirtualEvent waits until the virtual object has an event of reason
// with count, and returns it.
func waitVirtualEvent(t *testing.T, kube kubernetes.Interface, namespace, kind, name, reason string, count int32, timeout time.Duration) corev1.Event {
	t.Helper()
	var found corev1.Event
	testenv.WaitFor(t, timeout, fmt.Sprintf("%s %s/%s has a %s event of count %d", kind, namespace, name, reason, count), func(ctx context.Context) (bool, error) {
		events, err := virtualEvents(ctx, kube, namespace, kind, name)
		for _, e := range events {
			if e.Reason == reason {
				found = e
				return e.Count == count, fmt.Errorf("count %d", e.Count)
			}
		}
		return false, err
	})
	return found
}

func TestEventsOfPodsAndNodes(t *testing.T) {
	w := startEventsWorld(t, "events")
	ctx := t.Context()
	pod := w.runPod(t, "web")

	t.Run("a kubelet's event shows on the virtual pod with virtual names", func(t *testing.T) {
		message := fmt.Sprintf(`Failed to pull image "nope:1" for pod %s/%s on node %s: ErrImagePull`, w.Mount, pod.Name, w.node)
		start := time.Now()
		kubeletEvent(t, w.Physical, pod, "web-failed", "Failed", message)
		e := waitVirtualEvent(t, w.Virtual, w.namespace, "Pod", "web", "Failed", 1, 5*time.Second)
		t.Logf("recorded on the virtual pod after %v", time.Since(start).Round(time.Millisecond))
		want := fmt.Sprintf(`Failed to pull image "nope:1" for pod %s/web on node %s: ErrImagePull`, w.namespace, w.VirtualNode(w.node))
		if e.Message != want || e.Type != corev1.EventTypeWarning || e.Source.Component != "kubeocean-syncer/kubelet" ||
			e.Source.Host != w.VirtualNode(w.node) || e.InvolvedObject.FieldPath != "spec.containers{app}" {
			t.Errorf("virtual event: message %q source %+v field %q; want message %q from kubeocean-syncer/kubelet on %s",
				e.Message, e.Source, e.InvolvedObject.FieldPath, want, w.VirtualNode(w.node))
		}
	})

	t.Run("ten occurrences make one virtual event of count 10", func(t *testing.T) {
		// As the kubelet's recorder does: one event, its count patched.
		e := kubeletEvent(t, w.Physical, pod, "web-backoff", "BackOff", "Back-off pulling image")
		for count := 2; count <= 10; count++ {
			patch := fmt.Appendf(nil, `{"count":%d,"lastTimestamp":%q}`, count, time.Now().UTC().Format(time.RFC3339))
			if _, err := w.Physical.CoreV1().Events(w.Mount).Patch(ctx, e.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitVirtualEvent(t, w.Virtual, w.namespace, "Pod", "web", "BackOff", 10, 15*time.Second)
		events, err := virtualEvents(ctx, w.Virtual, w.namespace, "Pod", "web")
		if err != nil {
			t.Fatal(err)
		}
		backOffs := 0
		for _, e := range events {
			if e.Reason == "BackOff" {
				backOffs++
			}
		}
		if backOffs != 1 {
			t.Errorf("%d BackOff events on the virtual pod, want one", backOffs)
		}
	})

	t.Run("a lent node's event shows on its virtual node", func(t *testing.T) {
		now := metav1.Now()
		e := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: w.node + ".rebooted"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: w.node, UID: types.UID(w.node)},
			Type:           corev1.EventTypeWarning, Reason: "Rebooted",
			Message: "Node " + w.node + " has been rebooted, boot id: 1234",
			Source:  corev1.EventSource{Component: "kubelet", Host: w.node}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
		}
		if _, err := w.Physical.CoreV1().Events("default").Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		got := waitVirtualEvent(t, w.Virtual, "default", "Node", w.VirtualNode(w.node), "Rebooted", 1, 5*time.Second)
		if got.Message != "Node "+w.VirtualNode(w.node)+" has been rebooted, boot id: 1234" {
			t.Errorf("message %q", got.Message)
		}
	})

	t.Run("a restart replays nothing", func(t *testing.T) {
		before := eventCounts(t, w)
		w.StopSyncer()
		w.RunSyncer(t)
		// The restarted syncer records what is new, so it has read the old.
		kubeletEvent(t, w.Physical, pod, "web-after-restart", "Unhealthy", "Readiness probe failed")
		waitVirtualEvent(t, w.Virtual, w.namespace, "Pod", "web", "Unhealthy", 1, 30*time.Second)
		// The events it listed at its start were queued before that one;
		// a second more for any still in flight.
		time.Sleep(time.Second)
		after := eventCounts(t, w)
		delete(after, "Unhealthy")
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("virtual events before the restart %v, after %v", before, after)
		}
	})
}

// eventCounts are the virtual pod's and node's events, reason → count,
// with how many events there are of each.
func eventCounts(t *testing.T, w *eventsWorld) map[string]string {
	t.Helper()
	pod, err := virtualEvents(t.Context(), w.Virtual, w.namespace, "Pod", "web")
	if err != nil {
		t.Fatal(err)
	}
	node, err := virtualEvents(t.Context(), w.Virtual, "default", "Node", w.VirtualNode(w.node))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]string{}
	for _, e := range append(pod, node...) {
		if strings.HasPrefix(e.Source.Component, "kubeocean-syncer/") {
			counts[e.Reason] += fmt.Sprintf("[%s %d]", e.Name, e.Count)
		}
	}
	return counts
}

// TestEventsFloodIsBounded: 5,000 events of one pod in a few seconds make
// no more virtual writes than its token bucket allows.
func TestEventsFloodIsBounded(t *testing.T) {
	w := startEventsWorld(t, "flood")
	ctx := t.Context()
	pod := w.runPod(t, "noisy")

	watcher, err := w.Virtual.CoreV1().Events(w.namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=noisy"})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Stop()
	var mu sync.Mutex
	writes := 0
	var first time.Time
	go func() {
		for ev := range watcher.ResultChan() {
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				mu.Lock()
				if writes == 0 {
					first = time.Now()
				}
				writes++
				mu.Unlock()
			}
		}
	}()

	// A crash loop's BackOff over and over, and 50 probe failures of
	// distinct messages, each a new virtual event.
	// A client without the admin client's rate limit, so that the flood
	// takes seconds.
	config := physicalCluster.Config()
	config.QPS = -1
	flood := kubernetes.NewForConfigOrDie(config)
	start := time.Now()
	const total, writers = 5000, 16
	var wg sync.WaitGroup
	for g := range writers {
		wg.Go(func() {
			for i := g; i < total; i += writers {
				reason, message := "BackOff", "Back-off restarting failed container app"
				if i%100 == 0 {
					reason, message = "Unhealthy", fmt.Sprintf("Liveness probe failed: attempt %d", i)
				}
				kubeletEvent(t, flood, pod, fmt.Sprintf("noisy.%d", i), reason, message)
			}
		})
	}
	wg.Wait()
	t.Logf("wrote %d physical events in %v", total, time.Since(start).Round(time.Millisecond))
	// Every BackOff folds into one virtual event, whose count catches up.
	waitVirtualEvent(t, w.Virtual, w.namespace, "Pod", "noisy", "BackOff", total-total/100, 30*time.Second)
	time.Sleep(2 * time.Second)
	mu.Lock()
	defer mu.Unlock()
	elapsed := time.Since(first)
	limit := physicalevents.DefaultObjectBurst + int(physicalevents.DefaultObjectQPS*elapsed.Seconds()) + 1
	t.Logf("%d virtual event writes in %v (the bucket allows %d)", writes, elapsed.Round(time.Millisecond), limit)
	if writes > limit {
		t.Errorf("%d virtual event writes in %v, more than the %d the per-object bucket allows", writes, elapsed, limit)
	}
}

// TestEventsOfOtherPodsAreNeitherCachedNorEchoed: events of a pod in the
// mount namespace that is not the binding's, and forged events naming the
// virtual pod or the physical pod with another UID, are dropped as they
// are decoded and never reach the virtual cluster.
func TestEventsOfOtherPodsAreNeitherCachedNorEchoed(t *testing.T) {
	w := startEventsWorld(t, "foreign")
	ctx := t.Context()
	pod := w.runPod(t, "web")
	virtualPod, err := w.Virtual.CoreV1().Pods(w.namespace).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A second controller of the binding, run here so that its cache can
	// be counted; it writes what the syncer's writes, by the same names.
	c := runEventsController(t, w)

	foreign := testenv.KwokPod(w.Mount, "not-kubeocean", w.node, "10m", "16Mi", nil)
	foreign, err = w.Physical.CoreV1().Pods(w.Mount).Create(ctx, foreign, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubeletEvent(t, w.Physical, foreign, "foreign.1", "ForeignPod", "not the binding's pod")
	forgedVirtual := pod.DeepCopy()
	forgedVirtual.Name, forgedVirtual.UID = virtualPod.Name, virtualPod.UID
	kubeletEvent(t, w.Physical, forgedVirtual, "forged.1", "ForgedVirtual", "names the virtual pod")
	forgedUID := pod.DeepCopy()
	forgedUID.UID = "not-the-pods-uid"
	kubeletEvent(t, w.Physical, forgedUID, "forged.2", "ForgedUID", "names the physical pod with another UID")
	// The binding's own event, after them: once it is recorded, they were
	// seen too.
	kubeletEvent(t, w.Physical, pod, "web.1", "Pulled", "Container image already present on machine")
	waitVirtualEvent(t, w.Virtual, w.namespace, "Pod", "web", "Pulled", 1, 10*time.Second)
	testenv.WaitFor(t, 10*time.Second, "the second controller caches the binding's event", func(context.Context) (bool, error) {
		return c.Cached() >= 1, nil
	})
	time.Sleep(time.Second)
	if n := c.Cached(); n != 1 {
		t.Errorf("%d physical events cached, want only the binding's pod's one", n)
	}
	all, err := w.Virtual.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all.Items {
		switch e.Reason {
		case "ForeignPod", "ForgedVirtual", "ForgedUID":
			t.Errorf("echoed in the virtual cluster: %s/%s %s on %s %s", e.Namespace, e.Name, e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name)
		}
	}
}

// runEventsController runs an events controller of w's binding, its
// informers scoped as the syncer scopes them.
func runEventsController(t *testing.T, w *eventsWorld) *physicalevents.Controller {
	t.Helper()
	ctx := t.Context()
	owner := ownership.Owner{ClusterID: w.ClusterID, BindingUID: types.UID(w.BindingUID(ctx))}
	virtual := informers.NewCluster("virtual", w.Virtual, w.VirtualOcean, 0)
	physical := informers.NewCluster("physical", w.Physical, w.PhysOcean, 0)
	c, err := physicalevents.New(physicalevents.Options{
		BindingName: w.Binding + "-test", ClusterID: w.ClusterID, BindingUID: owner.BindingUID, MountNamespace: w.Mount,
		Component: syncer.Component, PhysicalClient: w.Physical.CoreV1(), VirtualClient: w.Virtual.CoreV1(),
		PhysicalPods: physical.Kube(informers.Scope{Namespace: w.Mount, LabelSelector: owner.Selector()}).Core().V1().Pods(),
		VirtualPods:  virtual.Kube(informers.Scope{}).Core().V1().Pods(),
		VirtualNodes: virtual.Kube(informers.Scope{}).Core().V1().Nodes(),
	})
	if err != nil {
		t.Fatal(err)
	}
	runController(t, ctx, "events controller", virtual, physical, func(ctx context.Context) error { return c.Run(ctx, 1) })
	return c
}
