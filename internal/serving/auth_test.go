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
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"
)

// tokenAuth knows the bearer tokens "reader" (allowed /metrics) and
// "nobody" (allowed nothing) and records what it was asked to authorize.
type tokenAuth struct {
	mu   sync.Mutex
	seen []authorizer.Attributes
}

func (a *tokenAuth) auth() *Auth {
	return &Auth{
		Authenticator: authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
			token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if token != "reader" && token != "nobody" {
				return nil, false, nil
			}
			return &authenticator.Response{User: &user.DefaultInfo{Name: token}}, true, nil
		}),
		Authorizer: authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
			a.mu.Lock()
			a.seen = append(a.seen, attrs)
			a.mu.Unlock()
			if attrs.GetUser().GetName() == "reader" && attrs.GetPath() == "/metrics" {
				return authorizer.DecisionAllow, "", nil
			}
			return authorizer.DecisionNoOpinion, "no RBAC policy matched", nil
		}),
	}
}

func TestProtect(t *testing.T) {
	a := &tokenAuth{}
	h := Protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }), a.auth())
	for _, tc := range []struct {
		name, method, path, token string
		wantCode                  int
		wantBody                  string
	}{
		{"anonymous", http.MethodGet, "/metrics", "", http.StatusUnauthorized, "Unauthorized"},
		{"unknown token", http.MethodGet, "/metrics", "forged", http.StatusUnauthorized, "Unauthorized"},
		{"not allowed", http.MethodGet, "/metrics", "nobody", http.StatusForbidden, "Forbidden (user=nobody, verb=get, path=/metrics): no RBAC policy matched"},
		{"allowed /metrics only", http.MethodGet, "/debug/pprof/heap", "reader", http.StatusForbidden, "path=/debug/pprof/heap"},
		{"verb of the method", http.MethodPost, "/metrics", "reader", http.StatusOK, "served"}, // checked: create
		{"allowed", http.MethodGet, "/metrics", "reader", http.StatusOK, "served"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.seen = nil
			r := httptest.NewRequest(tc.method, tc.path, nil)
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantCode || !strings.Contains(w.Body.String(), tc.wantBody) {
				t.Errorf("%s %s as %q: %d %q, want %d with %q", tc.method, tc.path, tc.token, w.Code, w.Body.String(), tc.wantCode, tc.wantBody)
			}
			if tc.wantCode == http.StatusUnauthorized {
				if len(a.seen) != 0 {
					t.Errorf("an unauthenticated request was authorized: %v", a.seen)
				}
				return
			}
			if len(a.seen) != 1 || a.seen[0].IsResourceRequest() || a.seen[0].GetPath() != tc.path || a.seen[0].GetVerb() != VerbOf(tc.method) {
				t.Errorf("authorized %+v, want one non-resource request for %s", a.seen, tc.path)
			}
		})
	}
}

// TestDelegatingAuthAsksTheAPIServer: a token is checked with a
// TokenReview and the path with a SubjectAccessReview of the non-resource
// URL, sent to the apiserver (here a stand-in); both answers are cached.
func TestDelegatingAuthAsksTheAPIServer(t *testing.T) {
	var mu sync.Mutex
	var reviews []string
	apiserver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		reviews = append(reviews, r.URL.Path)
		mu.Unlock()
		var answer any
		switch r.URL.Path {
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var review authenticationv1.TokenReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			if review.Spec.Token == "reader-token" || review.Spec.Token == "other-token" {
				review.Status = authenticationv1.TokenReviewStatus{Authenticated: true,
					User: authenticationv1.UserInfo{Username: strings.TrimSuffix(review.Spec.Token, "-token")}}
			}
			answer = review
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var review authorizationv1.SubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			nonResource := review.Spec.NonResourceAttributes
			if review.Spec.ResourceAttributes != nil || nonResource == nil {
				http.Error(w, "want a review of a non-resource URL", http.StatusBadRequest)
				return
			}
			review.Status.Allowed = review.Spec.User == "reader" && nonResource.Path == "/metrics" && nonResource.Verb == "get"
			answer = review
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	defer apiserver.Close()
	auth, err := NewDelegatingAuth(kubernetes.NewForConfigOrDie(&rest.Config{Host: apiserver.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}), "test-client-ca")
	if err != nil {
		t.Fatal(err)
	}
	h := Protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }), auth)
	for _, tc := range []struct {
		token string
		want  int
	}{{"", 401}, {"forged", 401}, {"other-token", 403}, {"reader-token", 200}, {"reader-token", 200}} {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.token != "" {
			r.Header.Set("Authorization", "Bearer "+tc.token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("GET /metrics with token %q: %d %q, want %d", tc.token, w.Code, w.Body.String(), tc.want)
		}
	}
	// forged, other and reader: one TokenReview each; other and reader:
	// one SubjectAccessReview each. The second reader request is cached.
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(reviews, ",")
	if tokens, access := strings.Count(all, "tokenreviews"), strings.Count(all, "subjectaccessreviews"); tokens != 3 || access != 2 {
		t.Errorf("%d TokenReviews and %d SubjectAccessReviews (%v), want 3 and 2", tokens, access, reviews)
	}
}

// TestStartSecure: the server speaks only TLS with the certificate of its
// folder, reloads it when the files change, and lets only authorized
// callers through.
func TestStartSecure(t *testing.T) {
	dir := t.TempDir()
	writePair(t, dir, "first")
	cert, err := NewCertificate("metrics", filepath.Join(dir, CertFileName), filepath.Join(dir, KeyFileName), "")
	if err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	a := &tokenAuth{}
	server, err := StartSecure(ctx, "127.0.0.1:0", MetricsHandler(NewRegistry()), a.auth(), cert)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer func() {
		cancel()
		if err := server.Wait(); err != nil {
			t.Errorf("Wait: %v", err)
		}
	}()

	if code, _ := httpGet(t, "http://"+server.Addr()+"/metrics"); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to the secure server: %d, want 400 (the client must use TLS)", code)
	}
	var served string
	get := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "https://"+server.Addr()+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		var name string
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, //nolint:gosec // the test checks which certificate is served
			VerifyConnection: func(cs tls.ConnectionState) error {
				name = cs.PeerCertificates[0].Subject.CommonName
				return nil
			},
		}}}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK && !strings.Contains(string(body), "go_goroutines") {
			t.Errorf("200 without metrics: %q", body)
		}
		served = name
		return resp.StatusCode
	}
	for token, want := range map[string]int{"": 401, "nobody": 403, "reader": 200} {
		if got := get(token); got != want {
			t.Errorf("GET /metrics as %q: %d, want %d", token, got, want)
		}
	}
	if served != "first" {
		t.Errorf("served certificate %q, want first", served)
	}
	writePair(t, dir, "second")
	deadline := time.Now().Add(30 * time.Second)
	for get("reader"); served != "second"; get("reader") {
		if time.Now().After(deadline) {
			t.Fatalf("still serving %q 30s after the files changed", served)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func writePair(t *testing.T, dir, host string) {
	t.Helper()
	cert, err := NewCertificate("test", "", "", host)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := cert.content.CurrentCertKeyContent()
	for name, data := range map[string][]byte{CertFileName: certPEM, KeyFileName: keyPEM} {
		// Replaced by a rename, as the kubelet updates a Secret's volume.
		tmp := filepath.Join(dir, "."+name)
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestValidateOptions(t *testing.T) {
	o := NewOptions()
	o.MetricsCertDir = "/certs"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--metrics-secure") {
		t.Errorf("cert dir without --metrics-secure: %v", err)
	}
	o.MetricsSecure = true
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}
