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
// Until then the controller's expectation of it (Controller.created)
// stands in for the cache: our own write of the mapping annotations brings
// the virtual pod's key back at once, usually before the physical pod's
// event, and without it each such pass would copy the dependencies and try
// the create again.
const createdPodTimeout = time.Minute

// The deletions below are no expectation: nothing the controller wrote is
// awaited. They are what the informer delivered, kept so that a later pass
// can trust it without a live read.

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
