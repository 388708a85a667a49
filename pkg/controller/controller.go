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
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ReconcileFunc brings the world in line with the desired state of one key.
// It must be idempotent: running it twice in a row makes no second write.
type ReconcileFunc[K comparable] func(ctx context.Context, key K) (Result, error)

// Options configure a Controller. Name and Reconcile are required.
type Options[K comparable] struct {
	// Name names the controller and its queue in logs and metrics.
	Name string
	// Reconcile is called for each key taken from the queue.
	Reconcile ReconcileFunc[K]
	// HasSynced are the informers Reconcile reads; Run waits for them.
	HasSynced []cache.InformerSynced
	// RateLimiter decides the backoff of failing keys; default
	// DefaultRateLimiter.
	RateLimiter workqueue.TypedRateLimiter[K]
	// Metrics receives reconcile and queue metrics; nil records none.
	Metrics *Metrics
	// Clock drives the queue's delays; tests inject a fake one.
	Clock clock.WithTicker
	// UnavailableRetry caps the wait between retries of a key whose
	// apiserver did not answer; default DefaultUnavailableRetry.
	UnavailableRetry time.Duration
}

// Controller owns a named, rate-limited workqueue of keys and the workers
// that reconcile them.
type Controller[K comparable] struct {
	name      string
	reconcile ReconcileFunc[K]
	queue     workqueue.TypedRateLimitingInterface[K]
	retries   retryLimiters[K]
	metrics   *reconcileMetrics

	mu        sync.Mutex
	hasSynced []cache.InformerSynced
	// failing are the keys waiting out a backoff after a failure, so that
	// RetryFailing can cut those waits short.
	failing map[K]struct{}
}

// DefaultRateLimiter backs off a failing key exponentially from 5 ms to
// 5 minutes per key, under an overall 50 qps / 300 burst token bucket, so a
// broken remote cluster is retried at most every few minutes without a hot loop.
func DefaultRateLimiter[K comparable]() workqueue.TypedRateLimiter[K] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[K](5*time.Millisecond, 5*time.Minute),
		&workqueue.TypedBucketRateLimiter[K]{Limiter: rate.NewLimiter(rate.Limit(50), 300)},
	)
}

// New builds a controller; nothing runs until Run.
func New[K comparable](opts Options[K]) *Controller[K] {
	if opts.Name == "" || opts.Reconcile == nil {
		panic("controller.New: Name and Reconcile are required")
	}
	rateLimiter := opts.RateLimiter
	if rateLimiter == nil {
		rateLimiter = DefaultRateLimiter[K]()
	}
	config := workqueue.TypedRateLimitingQueueConfig[K]{Name: opts.Name, Clock: opts.Clock}
	if opts.Metrics != nil {
		config.MetricsProvider = opts.Metrics.queueProvider()
	}
	return &Controller[K]{
		name:      opts.Name,
		reconcile: opts.Reconcile,
		hasSynced: opts.HasSynced,
		queue:     workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter, config),
		retries:   newRetryLimiters[K](opts.UnavailableRetry),
		metrics:   opts.Metrics.forController(opts.Name),
		failing:   map[K]struct{}{},
	}
}

// Name is the controller's name.
func (c *Controller[K]) Name() string { return c.name }

// Watch registers handler on informer, and makes Run wait until the handler
// has seen the informer's initial list, not only until the cache is filled:
// a controller that decides from "nothing references this" must not run on
// a cache whose handlers have not caught up. Call it before Run.
func (c *Controller[K]) Watch(informer cache.SharedIndexInformer, handler cache.ResourceEventHandler) error {
	registration, err := informer.AddEventHandler(handler)
	if err != nil {
		return fmt.Errorf("controller %s: registering an event handler: %w", c.name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hasSynced = append(c.hasSynced, registration.HasSynced)
	return nil
}

// Enqueue adds key for an immediate reconcile.
func (c *Controller[K]) Enqueue(key K) { c.queue.Add(key) }

// EnqueueAfter adds key to be reconciled after d.
func (c *Controller[K]) EnqueueAfter(key K, d time.Duration) { c.queue.AddAfter(key, d) }

// Len is the number of keys waiting (not those delayed or in flight).
func (c *Controller[K]) Len() int { return c.queue.Len() }

// Run waits for the caches, runs workers until ctx is cancelled, then shuts
// the queue down and returns once the items in flight are done. It returns an
// error only when the caches never synced.
func (c *Controller[K]) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx).WithValues("controller", c.name)
	ctx = klog.NewContext(ctx, logger)
	defer utilruntime.HandleCrashWithContext(ctx)

	logger.Info("Waiting for caches to sync")
	c.mu.Lock()
	hasSynced := slices.Clone(c.hasSynced)
	c.mu.Unlock()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, hasSynced...) {
		c.queue.ShutDown()
		logger.Info("Stopped before the caches synced")
		return nil
	}

	logger.Info("Starting workers", "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNextItem(ctx) {
			}
		})
	}

	<-ctx.Done()
	logger.Info("Shutting down, draining work in flight")
	c.queue.ShutDownWithDrain()
	wg.Wait()
	logger.Info("Stopped")
	return nil
}

// processNextItem handles one key; false means the queue is shut down.
func (c *Controller[K]) processNextItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	logger := klog.FromContext(ctx).WithValues("key", key)
	ctx = klog.NewContext(ctx, logger)

	start := time.Now()
	result, err := c.reconcileSafely(ctx, key)
	c.metrics.observe(start, result, err)

	switch {
	case err == nil && result.RequeueAfter > 0:
		c.forget(key)
		c.queue.AddAfter(key, result.RequeueAfter)
	case err == nil:
		c.forget(key)
	case IsTerminal(err):
		c.forget(key)
		logger.Error(err, "Reconcile failed; not retrying until the object changes")
	case ctx.Err() != nil:
		// Shutting down: the next process picks the key up from its informers.
		c.forget(key)
	default:
		c.retry(logger, key, err)
	}
	return true
}

// retry puts a failed key back by the class of its failure (see retry.go).
func (c *Controller[K]) retry(logger klog.Logger, key K, err error) {
	c.mu.Lock()
	c.failing[key] = struct{}{}
	c.mu.Unlock()
	switch classify(err) {
	case failureConflict:
		c.queue.AddAfter(key, c.retries.conflict.When(key))
		logger.V(4).Info("Reconcile conflicted with a newer version; retrying", "err", err)
	case failureUnavailable:
		delay := c.retries.unavailable.When(key)
		c.queue.AddAfter(key, delay)
		logger.Error(err, "Reconcile failed: the apiserver did not answer; retrying", "after", delay)
	default:
		c.queue.AddRateLimited(key)
		logger.Error(err, "Reconcile failed, retrying with backoff", "requeues", c.queue.NumRequeues(key))
	}
}

// forget drops every backoff kept for key.
func (c *Controller[K]) forget(key K) {
	c.queue.Forget(key)
	c.retries.forget(key)
	c.mu.Lock()
	delete(c.failing, key)
	c.mu.Unlock()
}

// RetryFailing drops the backoff of every key that failed and reconciles
// those keys at once. Call it when a cluster answers again after an
// outage: the backoff that failures grew while it did not answer (up to
// the RateLimiter's maximum, minutes by default) says nothing about the
// cluster now, and a key that fails once more after recovery starts again
// from the shortest wait. The delayed retries already queued still come,
// and find the key in step.
func (c *Controller[K]) RetryFailing() {
	c.mu.Lock()
	keys := make([]K, 0, len(c.failing))
	for key := range c.failing {
		keys = append(keys, key)
	}
	clear(c.failing)
	c.mu.Unlock()
	for _, key := range keys {
		c.queue.Forget(key)
		c.retries.forget(key)
		c.queue.Add(key)
	}
}

// reconcileSafely turns a panic in Reconcile into an error, so one bad
// object cannot stop the worker or the process.
func (c *Controller[K]) reconcileSafely(ctx context.Context, key K) (result Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.metrics.panicked()
			klog.FromContext(ctx).Error(nil, "Observed a panic in reconcile", "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic in reconcile: %v", r)
		}
	}()
	return c.reconcile(ctx, key)
}
