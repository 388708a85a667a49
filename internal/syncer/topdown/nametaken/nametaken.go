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

// Package nametaken writes a binding's PhysicalNamesTaken condition: the
// virtual pods whose physical name another object holds
// (ReasonPhysicalPodNameTaken), with what holds it, so that after a binding
// is recreated the operator sees which objects block it in one place,
// without reading every pod's events.
package nametaken

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
	kubeoceanclient "github.com/kubeocean/kubeocean/generated/clientset/versioned/typed/kubeocean/v1alpha1"
)

// maxBlockedListed bounds the pods the binding's condition names; the
// pods' own events name the rest.
const maxBlockedListed = 5

// Condition is what the binding's ClusterBindingConditionPhysicalNamesTaken
// says: the blocked pods, with what blocks each. It is safe for concurrent
// use.
type Condition struct {
	// bindingName names the binding whose status bindings writes; nil
	// bindings writes nothing.
	bindingName string
	bindings    BindingStatusWriter

	mu   sync.Mutex
	pods map[cache.ObjectName]string
	// synced: the condition was written, or found as it should be, since
	// the process started; until then a condition an earlier process left
	// is checked once.
	synced bool
	// writing: a Note is writing the condition; dirty: what it says
	// changed since that write read it. One writer at a time: the pod
	// workers of a burst all Note their pods before the first check is
	// done, and each would otherwise read the binding.
	writing, dirty bool
}

// New returns the condition of the binding bindingName, written through
// bindings; nil bindings writes nothing.
func New(bindingName string, bindings BindingStatusWriter) *Condition {
	return &Condition{bindingName: bindingName, bindings: bindings, pods: map[cache.ObjectName]string{}}
}

// set records what blocks key ("" once nothing does) and tells whether the
// binding's condition must be written: changed when what it says changed,
// check when it did not but was not written or found as it should be yet.
func (b *Condition) set(key cache.ObjectName, blocker string) (changed, check bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	previous, was := b.pods[key]
	switch {
	case blocker == "" && !was, previous == blocker:
		return false, !b.synced
	case blocker == "":
		delete(b.pods, key)
	default:
		b.pods[key] = blocker
	}
	return true, false
}

// condition is the binding's condition for the pods blocked now.
func (b *Condition) condition() (metav1.ConditionStatus, string, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pods) == 0 {
		return metav1.ConditionFalse, kubeoceanv1alpha1.ReasonNoPhysicalNameTaken, ""
	}
	keys := slices.SortedFunc(maps.Keys(b.pods), func(a, b cache.ObjectName) int { return strings.Compare(a.String(), b.String()) })
	var lines []string
	for _, k := range keys[:min(len(keys), maxBlockedListed)] {
		lines = append(lines, k.String()+": "+b.pods[k])
	}
	message := fmt.Sprintf("%d pods cannot be created: their physical names are taken. %s", len(keys), strings.Join(lines, "; "))
	if len(keys) > maxBlockedListed {
		message += fmt.Sprintf("; and %d more (event %s on each pod)", len(keys)-maxBlockedListed, kubeoceanv1alpha1.ReasonPhysicalPodNameTaken)
	}
	return metav1.ConditionTrue, kubeoceanv1alpha1.ReasonPhysicalNameTakenByOther, message
}

// Note records what blocks the pod key ("" when nothing does) and
// writes the binding's condition when that changes what it says. Without
// a binding client nothing is written. A failed write is logged, not
// returned: the pod's own condition and event say the same, and the next
// change writes it again.
//
// Only one Note writes at a time; a Note that finds a write under way
// leaves what it changed to that writer, which writes again before it
// returns.
func (b *Condition) Note(ctx context.Context, key cache.ObjectName, blocker string) {
	if b.bindings == nil {
		return
	}
	if changed, check := b.set(key, blocker); !changed && !check || !b.startWriting(changed) {
		return
	}
	for {
		err := b.write(ctx)
		if apierrors.IsConflict(err) {
			// The node controller writes its condition on the same status.
			err = b.write(ctx)
		}
		if err != nil {
			klog.FromContext(ctx).Error(err, "Writing the binding's condition", "condition", kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken)
		}
		if !b.writeAgain() {
			return
		}
	}
}

// startWriting tells whether the caller is to write the condition; false
// when a write is under way, which then writes a change again and makes a
// check needless.
func (b *Condition) startWriting(changed bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.writing {
		b.dirty = b.dirty || changed
		return false
	}
	b.writing, b.dirty = true, false
	return true
}

// writeAgain tells whether a change came while the writer wrote; if not,
// the writer is done.
func (b *Condition) writeAgain() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.dirty {
		b.writing = false
		return false
	}
	b.dirty = false
	return true
}

func (b *Condition) write(ctx context.Context) error {
	bindings := b.bindings.ClusterBindings()
	binding, err := bindings.Get(ctx, b.bindingName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	status, reason, message := b.condition()
	current := meta.FindStatusCondition(binding.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken)
	if current == nil && status == metav1.ConditionFalse ||
		current != nil && current.Status == status && current.Reason == reason && current.Message == message {
		b.markSynced()
		return nil
	}
	updated := binding.DeepCopy()
	meta.SetStatusCondition(&updated.Status.Conditions, metav1.Condition{
		Type: kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken, Status: status, Reason: reason, Message: message,
		ObservedGeneration: binding.Generation,
	})
	if _, err := bindings.UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	b.markSynced()
	return nil
}

func (b *Condition) markSynced() {
	b.mu.Lock()
	b.synced = true
	b.mu.Unlock()
}

// BindingStatusWriter reads and updates the binding's status.
type BindingStatusWriter = kubeoceanclient.ClusterBindingsGetter
