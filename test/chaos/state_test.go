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
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// convergeTimeout bounds every wait for the two clusters to agree.
const convergeTimeout = 3 * time.Minute

// virtualNodes are the names of the binding's virtual nodes.
func virtualNodes() []string {
	names := make([]string, len(physicalNodes))
	for i, n := range physicalNodes {
		names[i] = kubeoceanv1alpha1.VirtualNodeName(clusterID, n)
	}
	return names
}

// createNamespace creates a virtual namespace for a test's pods and waits
// for its default ServiceAccount, which admission requires of every pod.
func createNamespace(t *testing.T, name string) {
	t.Helper()
	ctx := t.Context()
	_, err := env.virtualKube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The controller-manager makes it. After an apiserver outage (an
	// earlier test) its watches come back on client-go's backoff, which
	// grows to between 30 and 60 s between attempts, so its controllers
	// may see a new namespace late.
	poll(t, 90*time.Second, "the default ServiceAccount of "+name, func(ctx context.Context) (string, error) {
		_, err := env.virtualKube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		return "", nil
	})
}

// createPods creates n pods named <prefix>-NNN in namespace, bound straight
// to the virtual nodes in turn, 20 at a time.
func createPods(t *testing.T, namespace, prefix string, n int) {
	t.Helper()
	nodes := virtualNodes()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 20)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("%s-%03d", prefix, i), Labels: map[string]string{podLabel: prefix}},
				Spec: corev1.PodSpec{
					NodeName:    nodes[i%len(nodes)],
					Tolerations: []corev1.Toleration{{Key: kubeoceanv1alpha1.TaintVirtualNode, Operator: corev1.TolerationOpExists}},
					Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
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

// physicalPodCount is how many pods Kubeocean has made in the mount
// namespace so far.
func physicalPodCount(ctx context.Context) (int, error) {
	pods, err := env.physicalKube.CoreV1().Pods(mountNamespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	return len(pods.Items), nil
}

// waitPhysicalPods waits until at least n physical pods exist and returns
// how many there are.
func waitPhysicalPods(t *testing.T, n int) int {
	t.Helper()
	var count int
	pollEvery(t, 100*time.Millisecond, 2*time.Minute, fmt.Sprintf("%d physical pods exist", n), func(ctx context.Context) (string, error) {
		var err error
		if count, err = physicalPodCount(ctx); err != nil {
			return err.Error(), nil
		}
		if count < n {
			return fmt.Sprintf("%d physical pods", count), nil
		}
		return "", nil
	})
	return count
}

// disagreement describes how the two clusters differ from the state every
// fault must end in, or is "" when they agree exactly:
//   - every test pod in the virtual cluster is Running, not being deleted,
//     and names its physical twin, which exists under the name derived
//     from it, runs, and names that virtual pod (by UID) back;
//   - every pod of the mount namespace is such a twin: none is an orphan,
//     none is a second twin of one virtual pod;
//   - every Secret and ConfigMap of the mount namespace is used by a
//     physical pod, and every one they use is there;
//   - every virtual node is Ready.
func disagreement(ctx context.Context) (string, error) {
	virtual, err := env.virtualKube.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: podLabel})
	if err != nil {
		return "", err
	}
	physical, err := env.physicalKube.CoreV1().Pods(mountNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", err
	}
	var problems []string
	problem := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	byName := map[string]*corev1.Pod{}
	for i := range physical.Items {
		byName[physical.Items[i].Name] = &physical.Items[i]
	}
	twinOf := map[string]string{} // physical name -> virtual namespace/name
	for i := range virtual.Items {
		v := &virtual.Items[i]
		key := v.Namespace + "/" + v.Name
		want := kubeoceanv1alpha1.PhysicalName(v.Namespace, v.Name)
		p := byName[want]
		switch {
		case v.DeletionTimestamp != nil:
			problem("virtual %s is being deleted", key)
		case p == nil:
			problem("virtual %s has no physical twin %s", key, want)
		case p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID] != string(v.UID):
			problem("physical %s names virtual UID %q, not %s's %s", want, p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodUID], key, v.UID)
		case p.DeletionTimestamp != nil:
			problem("physical twin of %s is being deleted", key)
		case v.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName] != want:
			problem("virtual %s names physical %q", key, v.Annotations[kubeoceanv1alpha1.AnnotationPhysicalPodName])
		case p.Status.Phase != corev1.PodRunning:
			problem("physical twin of %s is %s", key, p.Status.Phase)
		case v.Status.Phase != corev1.PodRunning:
			problem("virtual %s is %s", key, v.Status.Phase)
		}
		if p != nil {
			twinOf[p.Name] = key
		}
	}
	for _, p := range physical.Items {
		if _, ok := twinOf[p.Name]; !ok {
			problem("physical %s (virtual %s/%s) is an orphan or a duplicate", p.Name,
				p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodNamespace], p.Annotations[kubeoceanv1alpha1.AnnotationVirtualPodName])
		}
	}
	if len(physical.Items) != len(virtual.Items) {
		problem("%d physical pods for %d virtual pods", len(physical.Items), len(virtual.Items))
	}
	copies, err := copyProblems(ctx, physical.Items)
	if err != nil {
		return "", err
	}
	problems = append(problems, copies...)
	for _, name := range virtualNodes() {
		node, err := env.virtualKube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if apierrors.IsNotFound(err) {
				problem("virtual node %s does not exist", name)
				continue
			}
			return "", err
		}
		if s := readyStatus(node); s != corev1.ConditionTrue {
			problem("virtual node %s is Ready=%s", name, s)
		}
	}
	if len(problems) == 0 {
		return "", nil
	}
	sort.Strings(problems)
	summary := fmt.Sprintf("%d virtual pods, %d physical pods; %d problems", len(virtual.Items), len(physical.Items), len(problems))
	if len(problems) > 8 {
		problems = append(problems[:8], "...")
	}
	return summary + ": " + strings.Join(problems, "; "), nil
}

// copyProblems checks the Secrets and ConfigMaps of the mount namespace
// against what the physical pods use: each one used exists, and each one
// there is used (a copy or token Secret left behind by a killed process is
// an orphan).
func copyProblems(ctx context.Context, pods []corev1.Pod) ([]string, error) {
	secrets, err := env.physicalKube.CoreV1().Secrets(mountNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	configMaps, err := env.physicalKube.CoreV1().ConfigMaps(mountNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, s := range secrets.Items {
		have["Secret "+s.Name] = true
	}
	for _, c := range configMaps.Items {
		// The binding's claim on its mount namespace is no pod's.
		if c.Name != kubeoceanv1alpha1.MountNamespaceClaim {
			have["ConfigMap "+c.Name] = true
		}
	}
	used := map[string]string{} // kind and name -> a pod using it
	for _, pod := range pods {
		for _, ref := range references(&pod) {
			used[ref] = pod.Name
		}
	}
	var problems []string
	for ref, pod := range used {
		if !have[ref] {
			problems = append(problems, fmt.Sprintf("%s used by physical %s does not exist", ref, pod))
		}
	}
	for ref := range have {
		if _, ok := used[ref]; !ok {
			problems = append(problems, fmt.Sprintf("%s in %s is used by no pod", ref, mountNamespace))
		}
	}
	return problems, nil
}

// references are the Secrets and ConfigMaps a pod's volumes name, as
// "Secret name" and "ConfigMap name" (the test pods use nothing else).
func references(pod *corev1.Pod) []string {
	var refs []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			refs = append(refs, "Secret "+v.Secret.SecretName)
		case v.ConfigMap != nil:
			refs = append(refs, "ConfigMap "+v.ConfigMap.Name)
		case v.Projected != nil:
			for _, source := range v.Projected.Sources {
				if source.Secret != nil {
					refs = append(refs, "Secret "+source.Secret.Name)
				}
				if source.ConfigMap != nil {
					refs = append(refs, "ConfigMap "+source.ConfigMap.Name)
				}
			}
		}
	}
	return refs
}

func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return "absent"
}

// waitConverged waits until the clusters agree exactly (see disagreement)
// and returns how long that took.
func waitConverged(t *testing.T, what string) time.Duration {
	t.Helper()
	start := time.Now()
	poll(t, convergeTimeout, what, disagreement)
	return time.Since(start)
}

// settle is how long checkExact lets a late duplicate or deletion show.
const settle = 3 * time.Second

// checkExact checks after waiting wait (settle, after a fault), once more,
// that the clusters agree exactly: a duplicate or a late deletion from a
// restarted process would show up now. It also checks that no pod was
// deleted on either side since the log held deletionsBefore entries, and
// returns the number of virtual pods.
func checkExact(t *testing.T, deletionsBefore int, wait time.Duration) int {
	t.Helper()
	time.Sleep(wait)
	state, err := disagreement(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if state != "" {
		t.Errorf("the clusters no longer agree: %s", state)
	}
	for _, d := range env.deletions.since(deletionsBefore) {
		t.Errorf("a pod was deleted: %s", d)
	}
	virtual, err := env.virtualKube.CoreV1().Pods("").List(t.Context(), metav1.ListOptions{LabelSelector: podLabel})
	if err != nil {
		t.Fatal(err)
	}
	return len(virtual.Items)
}

// poll calls check until it reports nothing left to wait for ("") or the
// timeout passes. An error from check counts as not there yet: an
// apiserver may be down on purpose.
func poll(t *testing.T, timeout time.Duration, what string, check func(context.Context) (string, error)) {
	t.Helper()
	pollEvery(t, 250*time.Millisecond, timeout, what, check)
}

func pollEvery(t *testing.T, interval, timeout time.Duration, what string, check func(context.Context) (string, error)) {
	t.Helper()
	last := "nothing yet"
	err := wait.PollUntilContextTimeout(t.Context(), interval, timeout, true, func(ctx context.Context) (bool, error) {
		state, err := check(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			last = err.Error()
			return false, nil
		}
		last = state
		return state == "", nil
	})
	if err != nil {
		t.Fatalf("waiting %v until %s: %v; last seen: %s", timeout, what, err, last)
	}
}
