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

package events

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/utils/lru"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Defaults of Limits, which the syncer's flags show.
const (
	// DefaultObjectQPS and DefaultObjectBurst bound the event writes about
	// one virtual pod or node: a pod failing in a loop costs one write a
	// second once its first few are through.
	DefaultObjectQPS   = 1.0
	DefaultObjectBurst = 5
	// DefaultBindingQPS and DefaultBindingBurst bound the event writes of
	// one binding, whatever the number of its pods.
	DefaultBindingQPS   = 10.0
	DefaultBindingBurst = 50
)

// objectBuckets is how many objects' token buckets are kept; the least
// recently used beyond are forgotten (and start full when seen again).
const objectBuckets = 4096

// Limits are the token buckets of the virtual event writes.
type Limits struct {
	// ObjectQPS and ObjectBurst: per virtual pod or node.
	ObjectQPS   float64
	ObjectBurst int
	// BindingQPS and BindingBurst: for all of the binding's writes.
	BindingQPS   float64
	BindingBurst int
}

// withDefaults fills the zero fields.
func (l Limits) withDefaults() Limits {
	if l.ObjectQPS <= 0 {
		l.ObjectQPS = DefaultObjectQPS
	}
	if l.ObjectBurst <= 0 {
		l.ObjectBurst = DefaultObjectBurst
	}
	if l.BindingQPS <= 0 {
		l.BindingQPS = DefaultBindingQPS
	}
	if l.BindingBurst <= 0 {
		l.BindingBurst = DefaultBindingBurst
	}
	return l
}

// limiter takes one token from both the object's and the binding's bucket
// for each virtual write, or none.
type limiter struct {
	limits  Limits
	binding *rate.Limiter

	mu      sync.Mutex
	objects *lru.Cache
}

func newLimiter(limits Limits) *limiter {
	limits = limits.withDefaults()
	return &limiter{
		limits:  limits,
		binding: rate.NewLimiter(rate.Limit(limits.BindingQPS), limits.BindingBurst),
		objects: lru.New(objectBuckets),
	}
}

// take takes a token for a write about object at now. When either bucket
// is empty it takes none and says which (a drop reason) and how long until
// both would have one.
func (l *limiter) take(object string, now time.Time) (wait time.Duration, reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var bucket *rate.Limiter
	if cached, ok := l.objects.Get(object); ok {
		bucket = cached.(*rate.Limiter)
	} else {
		bucket = rate.NewLimiter(rate.Limit(l.limits.ObjectQPS), l.limits.ObjectBurst)
		l.objects.Add(object, bucket)
	}
	ours := bucket.ReserveN(now, 1)
	theirs := l.binding.ReserveN(now, 1)
	objectWait, bindingWait := ours.DelayFrom(now), theirs.DelayFrom(now)
	if objectWait == 0 && bindingWait == 0 {
		return 0, ""
	}
	ours.CancelAt(now)
	theirs.CancelAt(now)
	if objectWait >= bindingWait {
		return objectWait, kubeoceanv1alpha1.EventDropObjectRateLimit
	}
	return bindingWait, kubeoceanv1alpha1.EventDropBindingRateLimit
}
