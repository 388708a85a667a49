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

package serving

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/util/webhook"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/utils/clock"
)

// Bounds of what unknown bearer tokens may cost. Anyone who reaches a
// server's port can send tokens; each token the apiserver has not seen
// costs a TokenReview. A rejected token is remembered for
// rejectedTokenTTL, so sending the same one again costs nothing; the
// cache holds at most rejectedTokenCacheSize of them (the least recently
// seen go first), so sending many different ones costs no memory beyond
// that; and at most maxTokenReviewsInFlight reviews are asked at once, so
// that a flood of different tokens reaches the apiserver at the pace of
// its answers, not of the flood.
const (
	rejectedTokenTTL        = 30 * time.Second
	rejectedTokenCacheSize  = 10000
	maxTokenReviewsInFlight = 8
	tokenReviewTimeout      = 10 * time.Second
)

// tokenReviewer authenticates bearer tokens through TokenReviews.
// Unlike the webhook authenticator of k8s.io/apiserver, it tells a token
// the apiserver rejected (false, nil) from a review that could not be made
// (an error): only the first may be cached as rejected. (The webhook one
// returns the review's status.error as an error, which its cache does not
// keep, so the same garbage token would cost a review every time.)
type tokenReviewer struct {
	reviews  authenticationv1client.TokenReviewInterface
	backoff  wait.Backoff
	inFlight chan struct{}
	counts   *tokenCounts
}

func newTokenReviewer(reviews authenticationv1client.TokenReviewInterface, backoff wait.Backoff, counts *tokenCounts) *tokenReviewer {
	return &tokenReviewer{reviews: reviews, backoff: backoff, inFlight: make(chan struct{}, maxTokenReviewsInFlight), counts: counts}
}

// AuthenticateToken asks the apiserver about token. The servers here set
// no audiences on the request's context, so the review checks the token
// against the apiserver's own audiences, as the webhook authenticator of
// k8s.io/apiserver does without implicit audiences.
func (t *tokenReviewer) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, tokenReviewTimeout)
	defer cancel()
	select {
	case t.inFlight <- struct{}{}:
		defer func() { <-t.inFlight }()
	case <-ctx.Done():
		t.counts.reviewErrors.Add(1)
		return nil, false, fmt.Errorf("waiting to review the token: %w", ctx.Err())
	}
	var result *authenticationv1.TokenReview
	err := webhook.WithExponentialBackoff(ctx, t.backoff, func() error {
		var err error
		result, err = t.reviews.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err
	}, webhook.DefaultShouldRetry)
	if err != nil {
		t.counts.reviewErrors.Add(1)
		return nil, false, fmt.Errorf("reviewing the token: %w", err)
	}
	if !result.Status.Authenticated {
		// The review's error names what the apiserver tried; the caller
		// learns only that the token is invalid.
		t.counts.reviewsRejected.Add(1)
		return nil, false, nil
	}
	t.counts.reviewsAuthenticated.Add(1)
	info := result.Status.User
	var extra map[string][]string
	if len(info.Extra) > 0 {
		extra = make(map[string][]string, len(info.Extra))
		for k, v := range info.Extra {
			extra[k] = v
		}
	}
	return &authenticator.Response{
		User: &user.DefaultInfo{Name: info.Username, UID: info.UID, Groups: info.Groups, Extra: extra},
	}, true, nil
}

// rejectedTokens answers tokens the apiserver rejected lately without
// asking again, and passes the others on. It keeps a hash of each token,
// never the token.
type rejectedTokens struct {
	next  authenticator.Token
	ttl   time.Duration
	size  int
	clock clock.PassiveClock

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element
	// order holds the entries' keys, the most recently rejected or seen
	// first.
	order  *list.List
	counts *tokenCounts
}

type rejectedToken struct {
	key     [sha256.Size]byte
	expires time.Time
}

func newRejectedTokens(next authenticator.Token, ttl time.Duration, size int, clk clock.PassiveClock, counts *tokenCounts) *rejectedTokens {
	return &rejectedTokens{next: next, ttl: ttl, size: size, clock: clk,
		entries: map[[sha256.Size]byte]*list.Element{}, order: list.New(), counts: counts}
}

func (c *rejectedTokens) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	key := sha256.Sum256([]byte(token))
	if c.rejected(key) {
		c.counts.rejectedHits.Add(1)
		return nil, false, nil
	}
	c.counts.rejectedMisses.Add(1)
	resp, ok, err := c.next.AuthenticateToken(ctx, token)
	if !ok && err == nil {
		c.remember(key)
	}
	return resp, ok, err
}

// rejected tells whether key was rejected less than ttl ago.
func (c *rejectedTokens) rejected(key [sha256.Size]byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return false
	}
	if !c.clock.Now().Before(e.Value.(*rejectedToken).expires) {
		c.order.Remove(e)
		delete(c.entries, key)
		return false
	}
	c.order.MoveToFront(e)
	return true
}

func (c *rejectedTokens) remember(key [sha256.Size]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	expires := c.clock.Now().Add(c.ttl)
	if e, ok := c.entries[key]; ok {
		e.Value.(*rejectedToken).expires = expires
		c.order.MoveToFront(e)
		return
	}
	c.entries[key] = c.order.PushFront(&rejectedToken{key: key, expires: expires})
	for c.order.Len() > c.size {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*rejectedToken).key)
	}
}

func (c *rejectedTokens) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// tokenCounts are what the token authentication did, for its metrics.
type tokenCounts struct {
	rejectedHits, rejectedMisses                        atomic.Int64
	reviewsAuthenticated, reviewsRejected, reviewErrors atomic.Int64
}
