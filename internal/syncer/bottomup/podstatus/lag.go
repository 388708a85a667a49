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

package podstatus

import (
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
)

// unreportedGrace is how long the physical pod's UID waits to be recorded
// while its kubelet has not reported on it yet: its first report usually
// comes in a moment, and the UID goes with it in one write instead of two.
// Kubelets report late exactly when many pods start at once: in a
// 10,000-pod benchmark kwok's first report came up to 4 s after the pod
// (p99), and 10–24 s (p50) when kwok ran twice the pods; with a 1 s wait,
// most pods of that second run cost a second write. Until the UID is
// recorded, a physical pod deleted by someone else is created again
// rather than failing its virtual pod, which for a pod its kubelet never
// reported on is the better outcome anyway.
const unreportedGrace = 30 * time.Second

// cacheLag remembers, per physical pod, what the virtual pod cache has not
// shown yet (and what the physical pod has not reported yet), so that a
// reconcile that runs ahead of the cache waits for the event that brings it
// back instead of writing against a stale resourceVersion: with many
// workers the physical pod's next status change often comes before our
// last write does.
type cacheLag struct {
	mu sync.Mutex
	// replaced is the resourceVersion our last status write replaced:
	// while the cache still shows it, the cache is behind that write.
	replaced map[cache.ObjectName]string
	// unreportedSince is when the physical pod was first seen with nothing
	// reported on it but its UID to record.
	unreportedSince map[cache.ObjectName]time.Time
}

func newCacheLag() *cacheLag {
	return &cacheLag{
		replaced:        map[cache.ObjectName]string{},
		unreportedSince: map[cache.ObjectName]time.Time{},
	}
}

// wrote records that a status write replaced resourceVersion.
func (l *cacheLag) wrote(key cache.ObjectName, resourceVersion string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.replaced[key] = resourceVersion
}

// behindWrite tells whether the cached virtual pod, at resourceVersion, is
// still the one our last write replaced; once it is not, the write is
// forgotten.
func (l *cacheLag) behindWrite(key cache.ObjectName, resourceVersion string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	replaced, ok := l.replaced[key]
	if ok && replaced == resourceVersion {
		return true
	}
	delete(l.replaced, key)
	return false
}

// unreported records that only the UID of the physical pod is to be
// written, with nothing reported on it yet, and returns how much longer to
// wait for its first report; 0: write the UID alone.
func (l *cacheLag) unreported(key cache.ObjectName, now time.Time) time.Duration {
	return l.waitFor(l.unreportedSince, unreportedGrace, key, now)
}

// reported forgets the wait for a first report.
func (l *cacheLag) reported(key cache.ObjectName) { l.done(l.unreportedSince, key) }

func (l *cacheLag) waitFor(since map[cache.ObjectName]time.Time, grace time.Duration, key cache.ObjectName, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	first, ok := since[key]
	if !ok {
		first = now
		since[key] = now
	}
	return max(0, first.Add(grace).Sub(now))
}

func (l *cacheLag) done(since map[cache.ObjectName]time.Time, key cache.ObjectName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(since, key)
}

// forget drops what is known about a physical pod that is gone.
func (l *cacheLag) forget(key cache.ObjectName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.replaced, key)
	delete(l.unreportedSince, key)
}
