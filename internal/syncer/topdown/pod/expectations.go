package pod

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/kubeocean/kubeocean/pkg/controller"
)

// createdPodTimeout bounds how long a created physical pod may stay
// unseen by the physical pod informer before the controller stops waiting
// for it and looks again (a create then finds it, or its loss is noticed).
const createdPodTimeout = time.Minute

// createdPods remembers the physical pods the controller created that its
// physical pod informer has not shown yet. Our own write of the mapping
// annotations brings the virtual pod's key back at once, usually before the
// physical pod's event; without this memory each such pass would copy the
// dependencies and try the create again.
type createdPods struct {
	mu   sync.Mutex
	pods map[cache.ObjectName]createdPod
}

type createdPod struct {
	virtualUID types.UID
	until      time.Time
}

// expect records that the physical pod of the virtual pod key (with uid)
// was created now.
func (e *createdPods) expect(key cache.ObjectName, uid types.UID, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pods == nil {
		e.pods = map[cache.ObjectName]createdPod{}
	}
	e.pods[key] = createdPod{virtualUID: uid, until: now.Add(createdPodTimeout)}
}

// pending tells whether the physical pod of key (with uid) was created and
// is still expected to show up, and for how long.
func (e *createdPods) pending(key cache.ObjectName, uid types.UID, now time.Time) (time.Duration, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	created, ok := e.pods[key]
	if !ok {
		return 0, false
	}
	if created.virtualUID != uid || !now.Before(created.until) {
		delete(e.pods, key)
		return 0, false
	}
	return created.until.Sub(now), true
}

// observed forgets key: its physical pod showed up, or its virtual pod is
// gone.
func (e *createdPods) observed(key cache.ObjectName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.pods, key)
}

// deletedPodMemory is how long the deletion of a physical pod is
// remembered: longer than any pass of its virtual pod takes to follow it.
const deletedPodMemory = 5 * time.Minute

// deletedPods remembers, by UID, the physical pods whose deletion the
// physical pod informer delivered. A cache that showed a pod and then its
// deletion is right that it is gone, so the virtual pod is finished
// without a live read; only a pod the cache may not have seen yet is
// asked about live.
type deletedPods struct {
	mu   sync.Mutex
	uids map[types.UID]time.Time
}

// record remembers the deletion of the pod uid, seen now.
func (d *deletedPods) record(uid types.UID, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.uids == nil {
		d.uids = map[types.UID]time.Time{}
	}
	for seen, at := range d.uids {
		if now.Sub(at) > deletedPodMemory {
			delete(d.uids, seen)
		}
	}
	d.uids[uid] = now
}

// seen tells whether the deletion of the pod uid was delivered lately.
func (d *deletedPods) seen(uid types.UID, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.uids[uid]
	return ok && now.Sub(at) <= deletedPodMemory
}

// recordDeletions records the deletions of physical pods before next
// hears of them, so the pass next enqueues knows.
type recordDeletions struct {
	cache.ResourceEventHandler
	deleted *deletedPods
	clock   clock.PassiveClock
}

func (r recordDeletions) OnDelete(obj any) {
	if pod, ok := controller.Unwrap[*corev1.Pod](obj); ok && pod.UID != "" {
		r.deleted.record(pod.UID, r.clock.Now())
	}
	r.ResourceEventHandler.OnDelete(obj)
}
