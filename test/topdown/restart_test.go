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

package topdown

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

const restartPods = 200

// TestRestartDuringCreation kills the syncer while it creates 200 pods and
// starts it again: it must end with exactly one physical pod per virtual
// pod, none twice, none orphaned.
func TestRestartDuringCreation(t *testing.T) {
	w := lendNode(t, "restart", "cls-restart")
	ctx := t.Context()
	ns := "batch"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)

	var wg sync.WaitGroup
	errs := make(chan error, restartPods)
	for i := range restartPods {
		wg.Go(func() {
			pod := workload(ns, fmt.Sprintf("job-%03d", i), "cls-restart", nil)
			if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	managed := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean}
	countPhysical := func(ctx context.Context) (int, error) {
		pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, managed)
		if err != nil {
			return 0, err
		}
		return len(pods.Items), nil
	}
	testenv.WaitFor(t, 60*time.Second, "the syncer is part-way through", func(ctx context.Context) (bool, error) {
		n, err := countPhysical(ctx)
		return n >= 20, err
	})
	w.StopSyncer()
	stoppedAt, err := countPhysical(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("syncer stopped with %d of %d physical pods created", stoppedAt, restartPods)
	if stoppedAt >= restartPods {
		t.Fatalf("the syncer finished before it was stopped; the test proves nothing")
	}
	w.RunSyncer(t)

	testenv.WaitFor(t, 120*time.Second, "every virtual pod reports Running", func(ctx context.Context) (bool, error) {
		pods, err := w.Virtual.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == restartPods, fmt.Errorf("%d/%d Running", running, restartPods)
	})
	// Let any duplicate a second syncer run might make show up.
	time.Sleep(3 * time.Second)
	physical, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, managed)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range physical.Items {
		virtualName := p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName]
		if p.Name != kubeoceanv1alpha1.PhysicalName(ns, virtualName) || seen[virtualName] {
			t.Errorf("physical pod %s maps to %q: duplicate or misnamed", p.Name, virtualName)
		}
		seen[virtualName] = true
	}
	if len(physical.Items) != restartPods || len(seen) != restartPods {
		t.Fatalf("%d physical pods for %d distinct virtual pods, want exactly %d", len(physical.Items), len(seen), restartPods)
	}
}
