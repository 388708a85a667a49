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
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Where an apiserver publishes the CA of its client certificates, for the
// servers that delegate authentication to it.
const (
	authenticationConfigMapNamespace = "kube-system"
	authenticationConfigMapName      = "extension-apiserver-authentication"
	clientCAKey                      = "client-ca-file"
)

// Cache lifetimes of the delegated checks, as a kubelet in webhook mode
// uses them (authentication 2m, authorization 5m allowed / 30s denied);
// rejected tokens are kept apart, with a bound (tokens.go).
const (
	tokenCacheTTL = 2 * time.Minute
	allowCacheTTL = 5 * time.Minute
	denyCacheTTL  = 30 * time.Second
)

// Auth authenticates and authorizes requests against a cluster's
// apiserver, as a kubelet or an aggregated apiserver does: client
// certificates signed by the apiserver's client CA and bearer tokens
// through TokenReview, then a SubjectAccessReview of what was asked.
// Anonymous requests are refused.
type Auth struct {
	Authenticator authenticator.Request
	Authorizer    authorizer.Authorizer
	// ClientCA verifies client certificates; nil when they are not
	// accepted. Run keeps it in step with the cluster.
	ClientCA *dynamiccertificates.ConfigMapCAController

	once sync.Once
	// tokens and rejected are those of a delegating Auth, for its
	// metrics; nil in an Auth made of other parts.
	tokens   *tokenCounts
	rejected *rejectedTokens
}

// NewDelegatingAuth builds an Auth that asks the cluster of kube, with
// cached answers. name tells its client-CA controller apart in logs. It
// starts nothing: Run watches the client CA.
//
// The identity of kube needs create on tokenreviews and
// subjectaccessreviews, and list and watch on the ConfigMap
// kube-system/extension-apiserver-authentication.
func NewDelegatingAuth(kube kubernetes.Interface, name string) (*Auth, error) {
	clientCA, err := dynamiccertificates.NewDynamicCAFromConfigMapController(name,
		authenticationConfigMapNamespace, authenticationConfigMapName, clientCAKey, kube)
	if err != nil {
		return nil, err
	}
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	counts := &tokenCounts{}
	rejected := newRejectedTokens(
		// Tokens the apiserver accepted are kept for tokenCacheTTL; the
		// cache also makes concurrent requests with one token share one
		// review. It keeps no rejections (failure TTL 0): its store has no
		// bound, which rejectedTokens has.
		tokencache.New(newTokenReviewer(kube.AuthenticationV1().TokenReviews(), *backoff, counts), false, tokenCacheTTL, 0),
		rejectedTokenTTL, rejectedTokenCacheSize, clock.RealClock{}, counts)
	authn := group.NewAuthenticatedGroupAdder(unionauth.New(
		x509.NewDynamic(clientCA.VerifyOptions, x509.CommonNameUserConversion),
		bearertoken.New(rejected),
		// A WebSocket client (a browser) that cannot set headers sends
		// its token as a subprotocol.
		websocket.NewProtocolAuthenticator(rejected),
	))
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             allowCacheTTL,
		DenyCacheTTL:              denyCacheTTL,
		WebhookRetryBackoff:       backoff,
	}.New()
	if err != nil {
		return nil, err
	}
	return &Auth{Authenticator: authn, Authorizer: authz, ClientCA: clientCA, tokens: counts, rejected: rejected}, nil
}

// SharedAuth is a process's one delegated authentication and authorization
// against its own cluster (TokenReview, SubjectAccessReview, client
// certificates of the cluster's client CA), shared by every server that
// needs it: the metrics endpoint with --metrics-secure and the kubelet API
// of every syncer the process runs. One Auth means one watch of the client
// CA and one cache of answers. It is built on first use and runs until the
// context it was made with ends.
type SharedAuth struct {
	ctx  context.Context
	kube kubernetes.Interface

	once sync.Once
	auth *Auth
	err  error
	// stopped is closed once the Auth has stopped running.
	stopped <-chan struct{}
}

// NewSharedAuth returns a SharedAuth asking the cluster of kube, running
// until ctx ends once used.
func NewSharedAuth(ctx context.Context, kube kubernetes.Interface) *SharedAuth {
	return &SharedAuth{ctx: ctx, kube: kube}
}

// Get builds the Auth on first use and starts it.
func (s *SharedAuth) Get() (*Auth, error) {
	s.once.Do(func() {
		s.auth, s.err = NewDelegatingAuth(s.kube, "client-ca")
		if s.err == nil {
			s.stopped = s.auth.Start(s.ctx)
		}
	})
	return s.auth, s.err
}

// Run keeps the client CA current until ctx ends. It loads it once first,
// so that a server does not refuse every certificate while it starts. An
// Auth runs once: later calls of Run or Start return at once, so that the
// servers sharing one may each call Run while its owner, who started it
// first, keeps it running.
func (a *Auth) Run(ctx context.Context) {
	if a.claim() {
		a.run(ctx)
	}
}

// Start runs the Auth in the background until ctx ends, unless it runs
// already (see Run). The channel it returns is closed once the Auth has
// stopped; it is nil when Start did not start it.
func (a *Auth) Start(ctx context.Context) <-chan struct{} {
	if !a.claim() {
		return nil
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		a.run(ctx)
	}()
	return stopped
}

func (a *Auth) claim() bool {
	first := false
	a.once.Do(func() { first = a.ClientCA != nil })
	return first
}

func (a *Auth) run(ctx context.Context) {
	_ = a.ClientCA.RunOnce(ctx) // a missing CA is logged by the controller and retried by Run
	a.ClientCA.Run(ctx, 1)
}

// AuthError is a refused request: 401, 403, or 500 when the apiserver
// could not be asked.
type AuthError struct {
	Code    int
	Message string
}

func (e *AuthError) Error() string { return e.Message }

// Check authenticates r and authorizes what attributes makes of the user.
// It returns the user, or an AuthError.
func (a *Auth) Check(r *http.Request, attributes func(user.Info) authorizer.AttributesRecord) (user.Info, *AuthError) {
	resp, ok, err := a.Authenticator.AuthenticateRequest(r)
	if err != nil || !ok {
		reason := "no credentials"
		if err != nil {
			reason = err.Error()
		}
		return nil, &AuthError{Code: http.StatusUnauthorized, Message: "Unauthorized: " + reason}
	}
	attrs := attributes(resp.User)
	decision, reason, err := a.Authorizer.Authorize(r.Context(), attrs)
	if err != nil {
		return nil, &AuthError{Code: http.StatusInternalServerError, Message: "authorizing the request: " + err.Error()}
	}
	if decision != authorizer.DecisionAllow {
		msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, %s)", resp.User.GetName(), attrs.Verb, describe(attrs))
		if reason != "" {
			msg += ": " + reason
		}
		return nil, &AuthError{Code: http.StatusForbidden, Message: msg}
	}
	return resp.User, nil
}

func describe(attrs authorizer.AttributesRecord) string {
	if !attrs.ResourceRequest {
		return "path=" + attrs.Path
	}
	return fmt.Sprintf("resource=%s, subresource=%s", attrs.Resource, attrs.Subresource)
}

// Protect serves h only to callers the apiserver authenticates and
// authorizes for the request's path as a non-resource URL (verb from the
// method: get, create, ...), as the apiserver's own /metrics and
// /debug/pprof are protected: RBAC grants them with nonResourceURLs.
func Protect(h http.Handler, a *Auth) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := a.Check(r, func(u user.Info) authorizer.AttributesRecord {
			return authorizer.AttributesRecord{User: u, Verb: VerbOf(r.Method), Path: r.URL.Path}
		})
		if err != nil {
			http.Error(w, err.Message, err.Code)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// VerbOf is the API verb of an HTTP method, as the apiserver maps it for
// non-resource requests and a kubelet for its own.
func VerbOf(method string) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return "get"
}
