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

// Package remotecluster keeps clients to the physical (remote) clusters,
// built from kubeconfig Secrets and rebuilt when the Secret changes or the
// entry grows old, with a per-cluster rate limit. It also classifies errors:
// a broken Secret or kubeconfig is a ConfigError (not retried until the user
// changes it), everything else is transient, for the caller to retry with its own
// backoff.
package remotecluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultTTL bounds how long clients are reused, so credentials rotated
// outside the Secret (for example a projected token) are eventually picked up.
const DefaultTTL = 5 * time.Minute

// Options configures the cache and the clients it builds.
type Options struct {
	// QPS and Burst limit the requests to one remote cluster. Zero means the
	// client-go defaults (5 and 10); a negative QPS disables rate limiting.
	QPS   float32
	Burst int
	// UserAgent identifies the component to the remote API server.
	UserAgent string
	// Timeout bounds each request to the remote cluster; zero means none.
	Timeout time.Duration
	// TTL is how long an entry is reused before it is rebuilt; zero means
	// DefaultTTL and a negative value means entries never expire.
	TTL time.Duration
	// AllowExternalCredentials accepts kubeconfigs that use exec or
	// auth-provider plugins or paths to local files. Leave it off unless
	// whoever can write the Secrets is trusted with the manager's filesystem.
	AllowExternalCredentials bool
	// Clock is used to age entries; nil means the real clock.
	Clock clock.PassiveClock
}

// Entry is a set of clients for one remote cluster. It is shared between
// callers and must be treated as read-only (copy Config with rest.CopyConfig
// before changing it).
type Entry[T any] struct {
	// Secret is the kubeconfig Secret the entry was built from.
	Secret types.NamespacedName
	// Config is the client config parsed from the kubeconfig, with the
	// cache's QPS, burst, user agent and timeout applied.
	Config *rest.Config
	// Clients is what the cache's build function made from Config.
	Clients T
	// KubeconfigHash is the hex sha256 of the kubeconfig the entry was built from.
	KubeconfigHash string
	// Created is when the entry was built.
	Created time.Time
}

// BuildFunc makes the clients of one cluster from its config.
type BuildFunc[T any] func(*rest.Config) (T, error)

// Cache holds one Entry per kubeconfig Secret. It is safe for concurrent use;
// concurrent requests for the same Secret build the clients only once.
type Cache[T any] struct {
	getSecret SecretGetter
	build     BuildFunc[T]
	opts      Options

	mu    sync.Mutex
	slots map[types.NamespacedName]*slot[T]
}

// slot serialises the builds of one key without blocking other keys.
type slot[T any] struct {
	mu    sync.Mutex
	entry *Entry[T]
}

// NewCache returns a cache that reads kubeconfig Secrets with getSecret and
// makes clients from them with build.
func NewCache[T any](getSecret SecretGetter, build BuildFunc[T], opts Options) *Cache[T] {
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Cache[T]{
		getSecret: getSecret,
		build:     build,
		opts:      opts,
		slots:     map[types.NamespacedName]*slot[T]{},
	}
}

// NewKubeClientset is a BuildFunc for callers that only need the core clientset.
func NewKubeClientset(config *rest.Config) (kubernetes.Interface, error) {
	return kubernetes.NewForConfig(config)
}

// Get returns the clients for the kubeconfig in Secret namespace/name,
// building them if they are not cached, the kubeconfig changed, or the entry
// outlived the TTL. A missing Secret or key and a bad kubeconfig give a
// ConfigError and drop the cached entry; other errors are transient.
func (c *Cache[T]) Get(ctx context.Context, namespace, name string) (*Entry[T], error) {
	key := types.NamespacedName{Namespace: namespace, Name: name}
	kubeconfig, err := readKubeconfig(ctx, c.getSecret, key)
	if err != nil {
		if IsConfigError(err) {
			c.Invalidate(namespace, name)
		}
		return nil, err
	}
	hash := hashKubeconfig(kubeconfig)

	s := c.slotFor(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	reason := c.staleReason(s.entry, hash)
	if reason == "" {
		return s.entry, nil
	}
	entry, err := c.newEntry(key, kubeconfig, hash)
	if err != nil {
		if IsConfigError(err) {
			s.entry = nil
		}
		return nil, err
	}
	s.entry = entry
	klog.FromContext(ctx).V(2).Info("Built clients for remote cluster",
		"secret", klog.KRef(namespace, name), "reason", reason, "kubeconfigHash", hash[:12])
	return entry, nil
}

// Invalidate drops the cached entry of Secret namespace/name so the next Get
// rebuilds it. An entry being built concurrently is dropped once it is done.
func (c *Cache[T]) Invalidate(namespace, name string) {
	c.mu.Lock()
	s := c.slots[types.NamespacedName{Namespace: namespace, Name: name}]
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	s.entry = nil
	s.mu.Unlock()
}

// Forget removes everything cached for Secret namespace/name; call it when
// the last object referencing the Secret is deleted.
func (c *Cache[T]) Forget(namespace, name string) {
	c.Invalidate(namespace, name)
	c.mu.Lock()
	delete(c.slots, types.NamespacedName{Namespace: namespace, Name: name})
	c.mu.Unlock()
}

// Len returns how many Secrets the cache has a slot for.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.slots)
}

func (c *Cache[T]) slotFor(key types.NamespacedName) *slot[T] {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.slots[key]
	if !ok {
		s = &slot[T]{}
		c.slots[key] = s
	}
	return s
}

// staleReason says why entry cannot be reused, or "" when it can.
func (c *Cache[T]) staleReason(entry *Entry[T], hash string) string {
	switch {
	case entry == nil:
		return "notCached"
	case entry.KubeconfigHash != hash:
		return "kubeconfigChanged"
	case c.opts.TTL > 0 && c.opts.Clock.Since(entry.Created) >= c.opts.TTL:
		return "expired"
	default:
		return ""
	}
}

func (c *Cache[T]) newEntry(key types.NamespacedName, kubeconfig []byte, hash string) (*Entry[T], error) {
	config, err := restConfigFromKubeconfig(key, kubeconfig, c.opts)
	if err != nil {
		return nil, err
	}
	clients, err := c.build(config)
	if err != nil {
		return nil, fmt.Errorf("building clients from kubeconfig secret %s: %w", key, err)
	}
	return &Entry[T]{
		Secret:         key,
		Config:         config,
		Clients:        clients,
		KubeconfigHash: hash,
		Created:        c.opts.Clock.Now(),
	}, nil
}
