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

package controller

import (
	"errors"
	"io"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/util/workqueue"
)

// Failures are retried by what they say about the world, so that how long a
// key waits after an outage or a stale cache does not depend on how long the
// outage lasted:
//
//   - a conflict says only that our cache was behind the apiserver: the key
//     is retried within a second (ConflictRetry), never on a backoff that
//     earlier failures grew;
//   - an apiserver that cannot be reached, times out or is overloaded: the
//     key is retried at most UnavailableRetry apart (default 5 s), so
//     everything converges within seconds of the cluster answering again,
//     while a long outage costs one request per key every few seconds;
//   - any other error backs off with the controller's RateLimiter (up to
//     5 minutes by default).
const (
	// DefaultUnavailableRetry is the longest wait between retries of a key
	// whose apiserver did not answer.
	DefaultUnavailableRetry = 5 * time.Second
	// conflictRetryMax is the longest wait between retries of a key that
	// keeps conflicting: the informer's event normally arrives first.
	conflictRetryMax = time.Second
)

// failureClass sorts reconcile errors by how they are retried.
type failureClass int

const (
	failureOther failureClass = iota
	failureConflict
	failureUnavailable
)

func classify(err error) failureClass {
	switch {
	case apierrors.IsConflict(err):
		return failureConflict
	case Unavailable(err):
		return failureUnavailable
	}
	return failureOther
}

// Unavailable reports whether err says the apiserver could not be reached or
// could not answer (connection refused or reset, a timeout, 429, 500, 503,
// 504), rather than that the request itself was wrong.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) {
		return true
	}
	// Every transport failure of client-go's clients is a *url.Error,
	// which is a net.Error.
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// retryLimiters hold the per-key backoff of conflicts and of unavailable
// apiservers, apart from the controller's own rate limiter.
type retryLimiters[K comparable] struct {
	conflict, unavailable workqueue.TypedRateLimiter[K]
}

func newRetryLimiters[K comparable](unavailableMax time.Duration) retryLimiters[K] {
	if unavailableMax <= 0 {
		unavailableMax = DefaultUnavailableRetry
	}
	return retryLimiters[K]{
		conflict:    workqueue.NewTypedItemExponentialFailureRateLimiter[K](10*time.Millisecond, conflictRetryMax),
		unavailable: workqueue.NewTypedItemExponentialFailureRateLimiter[K](100*time.Millisecond, unavailableMax),
	}
}

func (r retryLimiters[K]) forget(key K) {
	r.conflict.Forget(key)
	r.unavailable.Forget(key)
}
