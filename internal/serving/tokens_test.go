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
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// reviewingCluster is a fake apiserver that accepts the token "good",
// fails reviews while down is set, and rejects everything else the way
// kube-apiserver does: authenticated false with the reason in
// status.error.
type reviewingCluster struct {
	*fake.Clientset
	mu   sync.Mutex
	down bool
}

func newReviewingCluster() *reviewingCluster {
	c := &reviewingCluster{Clientset: fake.NewClientset()}
	c.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		c.mu.Lock()
		down := c.down
		c.mu.Unlock()
		if down {
			// Not one that is retried, to keep the test fast.
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", nil)
		}
		review := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if review.Spec.Token == "good" {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "good-user"}}
		} else {
			review.Status = authenticationv1.TokenReviewStatus{Error: "[invalid bearer token, token lookup failed]"}
		}
		return true, review, nil
	})
	return c
}

func (c *reviewingCluster) setDown(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *reviewingCluster) tokenReviews() int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "tokenreviews" {
			n++
		}
	}
	return n
}

func authenticate(t *testing.T, a *Auth, token string) int {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	_, err := a.Check(r, func(u user.Info) authorizer.AttributesRecord { return authorizer.AttributesRecord{User: u} })
	if err == nil {
		return http.StatusOK
	}
	return err.Code
}

// TestRejectedTokensCostOneReview: many requests with one token the
// apiserver rejects (with a reason, which the webhook authenticator of
// k8s.io/apiserver does not cache) cost one TokenReview, sequential or
// concurrent; a review that fails is not remembered as a rejection; an
// accepted token is unaffected; the metrics count it all.
func TestRejectedTokensCostOneReview(t *testing.T) {
	cluster := newReviewingCluster()
	auth, err := NewDelegatingAuth(cluster, "test-client-ca")
	if err != nil {
		t.Fatal(err)
	}
	auth.Authorizer = authorizer.AuthorizerFunc(func(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
		return authorizer.DecisionAllow, "", nil
	})
	reg := prometheus.NewRegistry()
	if err := auth.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if err := auth.RegisterMetrics(reg); err != nil {
		t.Fatalf("registering twice: %v", err)
	}

	for range 20 {
		if code := authenticate(t, auth, "garbage"); code != http.StatusUnauthorized {
			t.Fatalf("garbage token: %d, want 401", code)
		}
	}
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() { _ = authenticate(t, auth, "garbage") })
	}
	wg.Wait()
	if n := cluster.tokenReviews(); n != 1 {
		t.Errorf("40 requests with one rejected token: %d TokenReviews, want 1", n)
	}

	cluster.setDown(true)
	for range 2 {
		if code := authenticate(t, auth, "other"); code != http.StatusUnauthorized {
			t.Fatalf("token while reviews fail: %d, want 401", code)
		}
	}
	cluster.setDown(false)
	if code := authenticate(t, auth, "other"); code != http.StatusUnauthorized {
		t.Fatalf("other token: %d, want 401", code)
	}
	if n := cluster.tokenReviews(); n != 4 {
		t.Errorf("a token whose reviews failed twice, then rejected: %d TokenReviews in all, want 4 (failures are not remembered)", n)
	}
	for range 3 {
		if code := authenticate(t, auth, "good"); code != http.StatusOK {
			t.Fatalf("good token: %d, want 200", code)
		}
	}
	if n := cluster.tokenReviews(); n != 5 {
		t.Errorf("3 requests with an accepted token: %d TokenReviews in all, want 5 (accepted tokens are cached)", n)
	}

	want := `
# HELP kubeocean_auth_rejected_token_cache_requests_total Bearer tokens looked up in the cache of tokens the apiserver rejected lately, by result: hit (refused without a TokenReview) or miss.
# TYPE kubeocean_auth_rejected_token_cache_requests_total counter
kubeocean_auth_rejected_token_cache_requests_total{result="hit"} 39
kubeocean_auth_rejected_token_cache_requests_total{result="miss"} 7
# HELP kubeocean_auth_token_reviews_total TokenReviews asked of the apiserver for bearer tokens, by result: authenticated, rejected, or error (no answer).
# TYPE kubeocean_auth_token_reviews_total counter
kubeocean_auth_token_reviews_total{result="authenticated"} 1
kubeocean_auth_token_reviews_total{result="error"} 2
kubeocean_auth_token_reviews_total{result="rejected"} 2
# HELP kubeocean_auth_rejected_token_cache_entries Rejected bearer tokens remembered (bounded; their hashes only).
# TYPE kubeocean_auth_rejected_token_cache_entries gauge
kubeocean_auth_rejected_token_cache_entries 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestRejectedTokensExpireAndAreBounded: a rejection is remembered for the
// TTL only, and the cache keeps the most recently seen tokens up to its
// size.
func TestRejectedTokensExpireAndAreBounded(t *testing.T) {
	asked := map[string]int{}
	next := authenticator.TokenFunc(func(_ context.Context, token string) (*authenticator.Response, bool, error) {
		asked[token]++
		return nil, false, nil
	})
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := newRejectedTokens(next, time.Minute, 3, clk, &tokenCounts{})
	ask := func(tokens ...string) {
		for _, token := range tokens {
			if _, ok, err := c.AuthenticateToken(t.Context(), token); ok || err != nil {
				t.Fatalf("token %s: ok %v, err %v", token, ok, err)
			}
		}
	}
	ask("a", "b", "c", "a") // a is now the most recently seen, b the least
	ask("d")                // evicts b
	ask("a", "c", "d", "b")
	if asked["a"] != 1 || asked["c"] != 1 || asked["d"] != 1 || asked["b"] != 2 {
		t.Errorf("reviews per token %v, want a, c, d once and b twice (evicted as the least recently seen)", asked)
	}
	if n := c.len(); n != 3 {
		t.Errorf("%d entries, want the bound 3", n)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	ask("a")
	if asked["a"] != 2 {
		t.Errorf("a rejection a TTL old: %d reviews of a, want 2", asked["a"])
	}
}
