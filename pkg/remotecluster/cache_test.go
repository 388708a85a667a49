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

package remotecluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
)

func newTestCache(t *testing.T, opts Options) (*Cache[testClients], *countingBuilder, *fake.Clientset) {
	t.Helper()
	kubeconfig := kubeconfigFor(t, "https://worker-1.example:6443", nil)
	client := fake.NewClientset(kubeconfigSecret(map[string][]byte{KubeconfigKey: kubeconfig}))
	builder := &countingBuilder{}
	cache := NewCache(SecretsFromClient(client.CoreV1()), builder.build, opts)
	return cache, builder, client
}

func mustGet(t *testing.T, cache *Cache[testClients]) *Entry[testClients] {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	entry, err := cache.Get(ctx, testNamespace, testSecret)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	return entry
}

func TestCacheBuildsOnceAndReuses(t *testing.T) {
	cache, builder, _ := newTestCache(t, Options{})

	first := mustGet(t, cache)
	second := mustGet(t, cache)

	if first != second {
		t.Error("second Get returned a different entry, want the cached one")
	}
	if got := builder.builds.Load(); got != 1 {
		t.Errorf("builds = %d, want 1", got)
	}
	if first.Clients.host != "https://worker-1.example:6443" {
		t.Errorf("clients built for %q, want the kubeconfig's server", first.Clients.host)
	}
	if first.Secret.String() != testNamespace+"/"+testSecret {
		t.Errorf("entry secret = %s", first.Secret)
	}
	if len(first.KubeconfigHash) != 64 {
		t.Errorf("kubeconfig hash %q is not a hex sha256", first.KubeconfigHash)
	}
}

func TestCacheRebuildsAfterTTL(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cache, builder, _ := newTestCache(t, Options{Clock: clock})

	first := mustGet(t, cache)
	clock.SetTime(clock.Now().Add(DefaultTTL - time.Second))
	if mustGet(t, cache) != first {
		t.Fatal("entry rebuilt before the TTL")
	}
	clock.SetTime(clock.Now().Add(time.Second))
	rebuilt := mustGet(t, cache)

	if rebuilt == first {
		t.Fatal("entry reused after the TTL")
	}
	if got := builder.builds.Load(); got != 2 {
		t.Errorf("builds = %d, want 2", got)
	}
	if !rebuilt.Created.Equal(clock.Now()) {
		t.Errorf("rebuilt entry created at %v, want %v", rebuilt.Created, clock.Now())
	}
}

func TestCacheNegativeTTLNeverExpires(t *testing.T) {
	clock := clocktesting.NewFakePassiveClock(time.Now())
	cache, builder, _ := newTestCache(t, Options{Clock: clock, TTL: -1})

	mustGet(t, cache)
	clock.SetTime(clock.Now().Add(24 * time.Hour))
	mustGet(t, cache)

	if got := builder.builds.Load(); got != 1 {
		t.Errorf("builds = %d, want 1", got)
	}
}

func TestCacheRebuildsWhenKubeconfigChanges(t *testing.T) {
	cache, builder, client := newTestCache(t, Options{})
	first := mustGet(t, cache)

	updateKubeconfig(t, client, kubeconfigFor(t, "https://worker-1-new.example:6443", nil))
	rebuilt := mustGet(t, cache)

	if got := builder.builds.Load(); got != 2 {
		t.Errorf("builds = %d, want 2", got)
	}
	if rebuilt.KubeconfigHash == first.KubeconfigHash {
		t.Error("hash unchanged after the kubeconfig changed")
	}
	if rebuilt.Clients.host != "https://worker-1-new.example:6443" {
		t.Errorf("clients built for %q, want the new server", rebuilt.Clients.host)
	}
}

func TestCacheInvalidate(t *testing.T) {
	cache, builder, _ := newTestCache(t, Options{})
	first := mustGet(t, cache)

	cache.Invalidate(testNamespace, testSecret)
	cache.Invalidate(testNamespace, "unknown") // must not panic or create a slot

	if mustGet(t, cache) == first {
		t.Error("entry reused after Invalidate")
	}
	if got := builder.builds.Load(); got != 2 {
		t.Errorf("builds = %d, want 2", got)
	}
	if got := cache.Len(); got != 1 {
		t.Errorf("Len = %d, want 1", got)
	}
}

func TestCacheForget(t *testing.T) {
	cache, builder, _ := newTestCache(t, Options{})
	mustGet(t, cache)

	cache.Forget(testNamespace, testSecret)

	if got := cache.Len(); got != 0 {
		t.Errorf("Len after Forget = %d, want 0", got)
	}
	mustGet(t, cache)
	if got := builder.builds.Load(); got != 2 {
		t.Errorf("builds = %d, want 2", got)
	}
}

func TestCacheConcurrentGetBuildsOnce(t *testing.T) {
	cache, builder, _ := newTestCache(t, Options{})
	// Slow builds make it likely that every goroutine arrives while the first builds.
	builder.before = func() { time.Sleep(20 * time.Millisecond) }
	_, ctx := ktesting.NewTestContext(t)

	const callers = 16
	entries := make([]*Entry[testClients], callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			entry, err := cache.Get(ctx, testNamespace, testSecret)
			if err != nil {
				t.Errorf("Get: %v", err)
			}
			entries[i] = entry
		})
	}
	wg.Wait()

	if got := builder.builds.Load(); got != 1 {
		t.Errorf("builds = %d, want 1", got)
	}
	for i, entry := range entries {
		if entry != entries[0] {
			t.Errorf("caller %d got a different entry", i)
		}
	}
}

func TestCacheConcurrentKeysAndInvalidation(t *testing.T) {
	cache, _, client := newTestCache(t, Options{})
	_, ctx := ktesting.NewTestContext(t)
	for _, name := range []string{"worker-2", "worker-3"} {
		secret := kubeconfigSecret(map[string][]byte{KubeconfigKey: kubeconfigFor(t, "https://"+name, nil)})
		secret.Name = name
		if _, err := client.CoreV1().Secrets(testNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	var wg sync.WaitGroup
	for i := range 30 {
		name := []string{testSecret, "worker-2", "worker-3"}[i%3]
		wg.Go(func() {
			if _, err := cache.Get(ctx, testNamespace, name); err != nil {
				t.Errorf("Get %s: %v", name, err)
			}
		})
		wg.Go(func() { cache.Invalidate(testNamespace, name) })
	}
	wg.Wait()
}

func TestCacheAppliesClientOptions(t *testing.T) {
	tests := []struct {
		name            string
		opts            Options
		wantQPS         float32
		wantBurst       int
		wantRateLimiter bool
		wantUserAgent   string
		wantTimeout     time.Duration
	}{
		{
			name:            "client-go defaults",
			opts:            Options{},
			wantQPS:         rest.DefaultQPS,
			wantBurst:       rest.DefaultBurst,
			wantRateLimiter: true,
		},
		{
			name:            "custom limits",
			opts:            Options{QPS: 25, Burst: 50, UserAgent: "kubeocean-syncer/worker-1", Timeout: 30 * time.Second},
			wantQPS:         25,
			wantBurst:       50,
			wantRateLimiter: true,
			wantUserAgent:   "kubeocean-syncer/worker-1",
			wantTimeout:     30 * time.Second,
		},
		{
			name:      "negative QPS disables rate limiting",
			opts:      Options{QPS: -1, Burst: 7},
			wantQPS:   -1,
			wantBurst: 7,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache, _, _ := newTestCache(t, tt.opts)
			config := mustGet(t, cache).Config

			if config.QPS != tt.wantQPS || config.Burst != tt.wantBurst {
				t.Errorf("QPS/Burst = %v/%d, want %v/%d", config.QPS, config.Burst, tt.wantQPS, tt.wantBurst)
			}
			if got := config.RateLimiter != nil; got != tt.wantRateLimiter {
				t.Fatalf("has rate limiter = %v, want %v", got, tt.wantRateLimiter)
			}
			if tt.wantRateLimiter && config.RateLimiter.QPS() != tt.wantQPS {
				t.Errorf("rate limiter QPS = %v, want %v", config.RateLimiter.QPS(), tt.wantQPS)
			}
			if config.UserAgent != tt.wantUserAgent {
				t.Errorf("UserAgent = %q, want %q", config.UserAgent, tt.wantUserAgent)
			}
			if config.Timeout != tt.wantTimeout {
				t.Errorf("Timeout = %v, want %v", config.Timeout, tt.wantTimeout)
			}
		})
	}
}

func TestCacheEachClusterHasItsOwnRateLimiter(t *testing.T) {
	cache, _, client := newTestCache(t, Options{QPS: 10, Burst: 20})
	_, ctx := ktesting.NewTestContext(t)
	other := kubeconfigSecret(map[string][]byte{KubeconfigKey: kubeconfigFor(t, "https://worker-2", nil)})
	other.Name = "worker-2"
	if _, err := client.CoreV1().Secrets(testNamespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	first := mustGet(t, cache)
	second, err := cache.Get(ctx, testNamespace, "worker-2")
	if err != nil {
		t.Fatal(err)
	}

	if first.Config.RateLimiter == second.Config.RateLimiter {
		t.Error("two clusters share one rate limiter")
	}
}

func TestCacheBuildErrorIsTransient(t *testing.T) {
	client := fake.NewClientset(kubeconfigSecret(map[string][]byte{KubeconfigKey: kubeconfigFor(t, "https://w", nil)}))
	buildErr := errors.New("discovery failed")
	cache := NewCache(SecretsFromClient(client.CoreV1()), func(*rest.Config) (int, error) { return 0, buildErr }, Options{})
	_, ctx := ktesting.NewTestContext(t)

	_, err := cache.Get(ctx, testNamespace, testSecret)

	if !errors.Is(err, buildErr) {
		t.Errorf("error %v does not wrap the build error", err)
	}
	if IsConfigError(err) {
		t.Errorf("build error %v classified as a config error", err)
	}
}

func TestNewKubeClientset(t *testing.T) {
	kube, err := NewKubeClientset(&rest.Config{Host: "https://worker.example"})
	if err != nil || kube == nil {
		t.Fatalf("NewKubeClientset = %v, %v", kube, err)
	}
}

func TestSecretsFromLister(t *testing.T) {
	getSecret := SecretsFromLister(newSecretLister(t, kubeconfigSecret(map[string][]byte{KubeconfigKey: []byte("x")})))
	secret, err := getSecret(context.Background(), testNamespace, testSecret)
	if err != nil || string(secret.Data[KubeconfigKey]) != "x" {
		t.Fatalf("got %v, %v", secret, err)
	}
}
