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

package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	"github.com/kubeocean/kubeocean/test/bench/benchenv"
)

// deletion is the end of the run: every virtual pod deleted at once.
type deletion struct {
	pods int
	// virtualGone and physicalGone: from the delete call until no pod is
	// left in the virtual namespace, and in the mount namespace; cleanGone:
	// until nothing of the binding is left in either cluster.
	virtualGone, physicalGone, cleanGone time.Duration
	// left is what remained when the wait ended (all 0 unless it timed
	// out).
	left   leftovers
	window window
}

// leftovers counts what the binding still has after its pods were deleted.
type leftovers struct {
	virtualPods, physicalPods, physicalCopies, virtualFinalizers int
}

func (l leftovers) total() int {
	return l.virtualPods + l.physicalPods + l.physicalCopies + l.virtualFinalizers
}

func (l leftovers) String() string {
	return fmt.Sprintf("%d / %d / %d / %d", l.virtualPods, l.physicalPods, l.physicalCopies, l.virtualFinalizers)
}

// deleteAll deletes every virtual pod of the run and times
// until the pods are gone in both clusters and the binding's copies
// (token Secrets, ConfigMaps, Secrets) and its finalizers on the virtual
// ConfigMaps and Secrets are gone too.
func (b *bench) deleteAll(ctx context.Context) (d deletion, err error) {
	pods, err := b.virtualKube.CoreV1().Pods(virtualNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return d, err
	}
	d.pods = len(pods.Items)
	before, err := b.snapshot(ctx)
	if err != nil {
		return d, err
	}
	benchenv.Logf("deletion: deleting all %d virtual pods", d.pods)
	start := time.Now()
	// One DELETE a pod, as kubectl delete sends them: a delete collection
	// of thousands of pods outlasts the apiserver's request timeout.
	err = benchenv.ForEach(d.pods, func(i int) error {
		err := b.virtualKube.CoreV1().Pods(virtualNS).Delete(ctx, pods.Items[i].Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return d, err
	}
	var virtualDone, physicalDone bool
	d.cleanGone, err = benchenv.WaitUntil(ctx, start, 15*time.Minute, "the binding's pods and copies gone", func(ctx context.Context) (bool, string, error) {
		if d.left, err = b.leftovers(ctx); err != nil {
			return false, "", err
		}
		if !virtualDone && d.left.virtualPods == 0 {
			virtualDone, d.virtualGone = true, time.Since(start)
		}
		if !physicalDone && d.left.physicalPods == 0 {
			physicalDone, d.physicalGone = true, time.Since(start)
		}
		return d.left.total() == 0, "left " + d.left.String(), nil
	})
	if err != nil {
		return d, err
	}
	d.window, err = b.since(ctx, before)
	return d, err
}

// leftovers counts, with cheap reads (one item a page), the run's virtual
// pods, the binding's physical pods and copies in the mount namespace, and
// the virtual ConfigMaps and Secrets still holding the binding's finalizer.
func (b *bench) leftovers(ctx context.Context) (l leftovers, err error) {
	one := metav1.ListOptions{Limit: 1}
	count := func(items int, remaining *int64) int {
		if items == 0 {
			return 0
		}
		if remaining == nil {
			return items
		}
		return items + int(*remaining)
	}
	vp, err := b.virtualKube.CoreV1().Pods(virtualNS).List(ctx, one)
	if err != nil {
		return l, err
	}
	l.virtualPods = count(len(vp.Items), vp.RemainingItemCount)
	pp, err := b.physKube.CoreV1().Pods(mount).List(ctx, one)
	if err != nil {
		return l, err
	}
	l.physicalPods = count(len(pp.Items), pp.RemainingItemCount)
	managed := metav1.ListOptions{LabelSelector: labels.Set{kubeoceanv1alpha1.LabelManagedBy: kubeoceanv1alpha1.ManagedByKubeocean}.String()}
	secrets, err := b.physKube.CoreV1().Secrets(mount).List(ctx, managed)
	if err != nil {
		return l, err
	}
	configMaps, err := b.physKube.CoreV1().ConfigMaps(mount).List(ctx, managed)
	if err != nil {
		return l, err
	}
	l.physicalCopies = len(secrets.Items) + len(configMaps.Items)
	virtualSecrets, err := b.virtualKube.CoreV1().Secrets(virtualNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return l, err
	}
	virtualConfigMaps, err := b.virtualKube.CoreV1().ConfigMaps(virtualNS).List(ctx, metav1.ListOptions{})
	if err != nil {
		return l, err
	}
	l.virtualFinalizers = withFinalizer(virtualSecrets.Items, kubeoceanv1alpha1.Finalizer(clusterID)) +
		withFinalizer(virtualConfigMaps.Items, kubeoceanv1alpha1.Finalizer(clusterID))
	return l, nil
}

// withFinalizer counts the objects that hold finalizer.
func withFinalizer[T any, P interface {
	*T
	GetFinalizers() []string
}](items []T, finalizer string) int {
	n := 0
	for i := range items {
		if slices.Contains(P(&items[i]).GetFinalizers(), finalizer) {
			n++
		}
	}
	return n
}
