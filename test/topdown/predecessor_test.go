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
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// TestRecreatedBindingAdoptsPredecessorsPod: a binding recreated under
// the same name (new UID, same cluster ID and physical cluster) finds the
// running physical pod, token Secret and ConfigMap copy its predecessor
// made, which carry a binding UID no ClusterBinding has. The predecessor
// is simulated by restamping the objects with another UID while the
// syncer is stopped. The new syncer adopts all three in place: the same
// physical pod (same UID) keeps running under the new binding's identity,
// no second pod is made, and the virtual pod reports no conflict.
// Today's syncers without the predecessor's proof leave all three
// unadopted, and the ConfigMap copy in conflict.
func TestRecreatedBindingAdoptsPredecessorsPod(t *testing.T) {
	w := lendNode(t, "recreated", "cls-recreated")
	ctx := t.Context()
	ns := "db"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-config"}, Data: map[string]string{"k": "v"}}
	if _, err := w.Virtual.CoreV1().ConfigMaps(ns).Create(ctx, config, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := workload(ns, "db-0", w.ClusterID, func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-config"}}}}}
	})
	virtual, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	binding := w.BindingUID(ctx)
	managed := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelManagedBy + "=" + kubeoceanv1alpha1.ManagedByKubeocean}
	var physicalUID types.UID
	testenv.WaitFor(t, 60*time.Second, "the physical pod runs", func(ctx context.Context) (bool, error) {
		pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, managed)
		if err != nil || len(pods.Items) != 1 {
			return false, err
		}
		physicalUID = pods.Items[0].UID
		return pods.Items[0].Status.Phase == corev1.PodRunning, nil
	})

	w.StopSyncer()
	const predecessor = "uid-of-a-deleted-binding"
	restamped := restampPredecessor(t, w, binding, predecessor)
	if restamped.pods != 1 || restamped.secrets < 1 || restamped.configMaps != 1 {
		t.Fatalf("restamped %+v; want the pod, its token Secret and the ConfigMap copy", restamped)
	}
	w.RunSyncer(t)

	testenv.WaitFor(t, 60*time.Second, "the new binding adopts the pod, its token Secret and its copy", func(ctx context.Context) (bool, error) {
		pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, managed)
		if err != nil {
			return false, err
		}
		if len(pods.Items) != 1 || pods.Items[0].UID != physicalUID {
			return false, fmt.Errorf("physical pods %d, want only the one there (UID %s)", len(pods.Items), physicalUID)
		}
		secrets, err := w.Physical.CoreV1().Secrets(w.Mount).List(ctx, managed)
		if err != nil {
			return false, err
		}
		configMaps, err := w.Physical.CoreV1().ConfigMaps(w.Mount).List(ctx, managed)
		if err != nil {
			return false, err
		}
		objects := []metav1.Object{&pods.Items[0]}
		for i := range secrets.Items {
			objects = append(objects, &secrets.Items[i])
		}
		for i := range configMaps.Items {
			objects = append(objects, &configMaps.Items[i])
		}
		var left []string
		for _, obj := range objects {
			if obj.GetLabels()[kubeoceanv1alpha1.LabelBindingUID] != binding {
				left = append(left, obj.GetName())
			}
		}
		return len(left) == 0, fmt.Errorf("not adopted: %v", left)
	})
	// Adopted, the pod is synced as any other: its virtual twin is Running
	// and was never told its name is taken.
	testenv.WaitFor(t, 30*time.Second, "the virtual pod Running", func(ctx context.Context) (bool, error) {
		got, err := w.Virtual.CoreV1().Pods(ns).Get(ctx, virtual.Name, metav1.GetOptions{})
		return err == nil && got.UID == virtual.UID && got.Status.Phase == corev1.PodRunning, err
	})
	events, err := w.Virtual.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The ConfigMap's controller may meet the copy before the pod proves
	// its predecessor, and says so once; the pod itself is never blocked.
	for _, e := range events.Items {
		if e.Type == corev1.EventTypeWarning && e.InvolvedObject.Kind == "Pod" {
			t.Errorf("warning event on %s: %s %s", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

type restampCount struct{ pods, secrets, configMaps int }

// restampPredecessor gives every physical object of binding the identity
// of predecessor, as if an earlier binding of this name had made them.
func restampPredecessor(t *testing.T, w *testenv.SyncerWorld, binding, predecessor string) restampCount {
	t.Helper()
	ctx := t.Context()
	selector := metav1.ListOptions{LabelSelector: kubeoceanv1alpha1.LabelBindingUID + "=" + binding}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q}}}`, kubeoceanv1alpha1.LabelBindingUID, predecessor)
	var n restampCount
	pods, err := w.Physical.CoreV1().Pods(w.Mount).List(ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if _, err := w.Physical.CoreV1().Pods(w.Mount).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		n.pods++
	}
	secrets, err := w.Physical.CoreV1().Secrets(w.Mount).List(ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.Items {
		if _, err := w.Physical.CoreV1().Secrets(w.Mount).Patch(ctx, s.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		n.secrets++
	}
	configMaps, err := w.Physical.CoreV1().ConfigMaps(w.Mount).List(ctx, selector)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range configMaps.Items {
		if _, err := w.Physical.CoreV1().ConfigMaps(w.Mount).Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		n.configMaps++
	}
	return n
}

// TestRecreatedBindingSaysWhatBlocksIt: a physical pod an earlier binding
// made for an earlier virtual pod of the same name (a StatefulSet's db-0
// recreated while the binding was gone) is neither adopted nor deleted:
// the binding's PhysicalNamesTaken condition names the pod, the physical
// pod and the binding UID it carries. Once the operator deletes it, the
// pod is created and the condition turns False.
func TestRecreatedBindingSaysWhatBlocksIt(t *testing.T) {
	w := lendNode(t, "blocked", "cls-blocked")
	ctx := t.Context()
	ns := "db-blocked"
	testenv.CreateNamespace(t, w.Virtual, ns)
	waitDefaultServiceAccount(t, w, ns)
	pod := workload(ns, "db-0", w.ClusterID, nil)
	blocker := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: w.Mount, Name: kubeoceanv1alpha1.PhysicalName(ns, "db-0"),
			Labels: map[string]string{
				kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean,
				kubeoceanv1alpha1.LabelClusterID: w.ClusterID, kubeoceanv1alpha1.LabelBindingUID: "uid-of-a-deleted-binding",
			},
			Annotations: map[string]string{
				kubeoceanv1alpha1.AnnotationVirtualPodNamespace: ns, kubeoceanv1alpha1.AnnotationVirtualPodName: "db-0",
				kubeoceanv1alpha1.AnnotationVirtualPodUID: "uid-of-an-earlier-db-0",
			},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	if _, err := w.Physical.CoreV1().Pods(w.Mount).Create(ctx, blocker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Virtual.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	condition := func(ctx context.Context) (*metav1.Condition, error) {
		binding, err := w.VirtualOcean.KubeoceanV1alpha1().ClusterBindings().Get(ctx, w.Binding, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return meta.FindStatusCondition(binding.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken), nil
	}
	testenv.WaitFor(t, 60*time.Second, "the binding names what blocks db-0", func(ctx context.Context) (bool, error) {
		c, err := condition(ctx)
		if err != nil || c == nil {
			return false, err
		}
		return c.Status == metav1.ConditionTrue && strings.Contains(c.Message, ns+"/db-0: physical pod "+w.Mount+"/"+blocker.Name) &&
			strings.Contains(c.Message, "binding UID uid-of-a-deleted-binding"), fmt.Errorf("condition %+v", c)
	})
	live, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, blocker.Name, metav1.GetOptions{})
	if err != nil || live.Labels[kubeoceanv1alpha1.LabelBindingUID] != "uid-of-a-deleted-binding" {
		t.Fatalf("the blocker was touched: %v, %v", live, err)
	}

	if err := w.Physical.CoreV1().Pods(w.Mount).Delete(ctx, blocker.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	// The syncer rechecks a taken name every 2 minutes; deleting the
	// virtual pod's blocker sends it no event, so the pod is edited to
	// bring it back sooner, as an operator may.
	testenv.WaitFor(t, 30*time.Second, "the blocker gone", func(ctx context.Context) (bool, error) {
		_, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, blocker.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	patch := []byte(`{"metadata":{"labels":{"retry":"1"}}}`)
	if _, err := w.Virtual.CoreV1().Pods(ns).Patch(ctx, "db-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 60*time.Second, "db-0 created and the condition False", func(ctx context.Context) (bool, error) {
		c, err := condition(ctx)
		if err != nil || c == nil {
			return false, err
		}
		created, err := w.Physical.CoreV1().Pods(w.Mount).Get(ctx, blocker.Name, metav1.GetOptions{})
		return err == nil && created.Labels[kubeoceanv1alpha1.LabelBindingUID] != "uid-of-a-deleted-binding" && c.Status == metav1.ConditionFalse,
			fmt.Errorf("condition %+v, pod %v", c, err)
	})
}
