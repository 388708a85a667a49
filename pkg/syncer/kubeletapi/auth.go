package kubeletapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
)

// Where the virtual apiserver publishes the CA of its client certificates,
// as every apiserver does for the servers it delegates to.
const (
	authenticationConfigMapNamespace = "kube-system"
	authenticationConfigMapName      = "extension-apiserver-authentication"
	clientCAKey                      = "client-ca-file"
)

// Cache lifetimes of the delegated checks, as a kubelet in webhook mode
// uses them (authentication 2m, authorization 5m allowed / 30s denied).
const (
	tokenCacheTTL = 2 * time.Minute
	allowCacheTTL = 5 * time.Minute
	denyCacheTTL  = 30 * time.Second
)

// Auth authenticates and authorizes kubelet API requests against the
// virtual cluster, like a kubelet in webhook mode: client certificates
// signed by the virtual apiserver's client CA and bearer tokens through
// TokenReview; every request then through a SubjectAccessReview on the
// node's subresource. Anonymous requests are refused.
type Auth struct {
	Authenticator authenticator.Request
	Authorizer    authorizer.Authorizer
	// ClientCA verifies client certificates; nil when they are not
	// accepted. Run keeps it in step with the virtual cluster.
	ClientCA *dynamiccertificates.ConfigMapCAController
}

// NewDelegatingAuth builds an Auth that asks the virtual cluster. It
// starts nothing: Run watches the client CA.
func NewDelegatingAuth(virtual kubernetes.Interface) (*Auth, error) {
	clientCA, err := dynamiccertificates.NewDynamicCAFromConfigMapController("kubelet-api-client-ca",
		authenticationConfigMapNamespace, authenticationConfigMapName, clientCAKey, virtual)
	if err != nil {
		return nil, err
	}
	backoff := &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		TokenAccessReviewClient:            virtual.AuthenticationV1(),
		TokenAccessReviewTimeout:           10 * time.Second,
		WebhookRetryBackoff:                backoff,
		CacheTTL:                           tokenCacheTTL,
		ClientCertificateCAContentProvider: clientCA,
	}.New()
	if err != nil {
		return nil, err
	}
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: virtual.AuthorizationV1(),
		AllowCacheTTL:             allowCacheTTL,
		DenyCacheTTL:              denyCacheTTL,
		WebhookRetryBackoff:       backoff,
	}.New()
	if err != nil {
		return nil, err
	}
	return &Auth{Authenticator: authn, Authorizer: authz, ClientCA: clientCA}, nil
}

// Run keeps the client CA current until ctx ends. The first load happens
// before it returns control to the loop, so that a syncer does not serve
// while it would refuse every certificate.
func (a *Auth) Run(ctx context.Context) {
	if a.ClientCA == nil {
		return
	}
	_ = a.ClientCA.RunOnce(ctx) // a missing CA is logged by the controller and retried by Run
	a.ClientCA.Run(ctx, 1)
}

// check authenticates r and authorizes it on node. It returns nil, or a
// requestError with 401 or 403.
func (a *Auth) check(r *http.Request, node string) (user.Info, error) {
	resp, ok, err := a.Authenticator.AuthenticateRequest(r)
	if err != nil || !ok {
		reason := "no credentials"
		if err != nil {
			reason = err.Error()
		}
		return nil, &requestError{Code: http.StatusUnauthorized, Message: "Unauthorized: " + reason}
	}
	attrs := requestAttributes(resp.User, r, node)
	decision, reason, err := a.Authorizer.Authorize(r.Context(), attrs)
	if err != nil {
		return nil, &requestError{Code: http.StatusInternalServerError, Message: "authorizing the request: " + err.Error()}
	}
	if decision != authorizer.DecisionAllow {
		msg := fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=%s)", resp.User.GetName(), attrs.Verb, attrs.Subresource)
		if reason != "" {
			msg += ": " + reason
		}
		return nil, &requestError{Code: http.StatusForbidden, Message: msg}
	}
	return resp.User, nil
}

// requestAttributes maps a request to the node subresource a kubelet
// checks for it: stats, metrics, log (node logs), and proxy for the rest
// (container logs, exec, attach, port-forward included).
func requestAttributes(u user.Info, r *http.Request, node string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            verbOf(r.Method),
		Namespace:       "",
		APIGroup:        "",
		APIVersion:      "v1",
		Resource:        "nodes",
		Subresource:     subresourceOf(r.URL.Path),
		Name:            node,
		ResourceRequest: true,
		Path:            r.URL.Path,
	}
}

func subresourceOf(path string) string {
	switch {
	case isSubpath(path, "/stats"):
		return "stats"
	case isSubpath(path, "/metrics"):
		return "metrics"
	case isSubpath(path, "/logs"):
		return "log"
	}
	return "proxy"
}

func isSubpath(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

func verbOf(method string) string {
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
