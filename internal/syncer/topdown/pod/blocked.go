package pod

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

// blockedPods are the virtual pods whose physical name another object
// holds (ReasonPhysicalPodNameTaken), with what holds it, so that the
// binding says so in one place (ClusterBindingConditionPhysicalNamesTaken):
// after a binding is recreated, the operator sees which objects block it
// without reading every pod's events.
type blockedPods struct {
	mu   sync.Mutex
	pods map[cache.ObjectName]string
	// synced: the condition was written, or found as it should be, since
	// the process started; until then a condition an earlier process left
	// is checked once.
	synced bool
}

func newBlockedPods() *blockedPods {
	return &blockedPods{pods: map[cache.ObjectName]string{}}
}

// set records what blocks key ("" once nothing does) and tells whether the
// binding's condition must be written again.
func (b *blockedPods) set(key cache.ObjectName, blocker string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	previous, was := b.pods[key]
	switch {
	case blocker == "" && !was:
		return !b.synced
	case blocker == "":
		delete(b.pods, key)
	case previous == blocker:
		return !b.synced
	default:
		b.pods[key] = blocker
	}
	return true
}

// condition is the binding's condition for the pods blocked now.
func (b *blockedPods) condition() (metav1.ConditionStatus, string, string) {
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
		message += fmt.Sprintf("; and %d more (event %s on each pod)", len(keys)-maxBlockedListed, ReasonPhysicalPodNameTaken)
	}
	return metav1.ConditionTrue, kubeoceanv1alpha1.ReasonPhysicalNameTakenByOther, message
}

// noteBlocked records what blocks the pod key ("" when nothing does) and
// writes the binding's condition when that changes what it says. Without
// a binding client nothing is written. A failed write is logged, not
// returned: the pod's own condition and event say the same, and the next
// change writes it again.
func (c *Controller) noteBlocked(ctx context.Context, key cache.ObjectName, blocker string) {
	if c.bindingStatus == nil || !c.blocked.set(key, blocker) {
		return
	}
	err := c.writeBlockedCondition(ctx)
	if apierrors.IsConflict(err) {
		// The node controller writes its condition on the same status.
		err = c.writeBlockedCondition(ctx)
	}
	if err != nil {
		klog.FromContext(ctx).Error(err, "Writing the binding's condition", "condition", kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken)
	}
}

func (c *Controller) writeBlockedCondition(ctx context.Context) error {
	bindings := c.bindingStatus.ClusterBindings()
	binding, err := bindings.Get(ctx, c.bindingName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	status, reason, message := c.blocked.condition()
	current := meta.FindStatusCondition(binding.Status.Conditions, kubeoceanv1alpha1.ClusterBindingConditionPhysicalNamesTaken)
	if current == nil && status == metav1.ConditionFalse ||
		current != nil && current.Status == status && current.Reason == reason && current.Message == message {
		c.markBlockedSynced()
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
	c.markBlockedSynced()
	return nil
}

func (c *Controller) markBlockedSynced() {
	c.blocked.mu.Lock()
	c.blocked.synced = true
	c.blocked.mu.Unlock()
}

// BindingStatusWriter reads and updates the binding's status.
type BindingStatusWriter = kubeoceanclient.ClusterBindingsGetter
