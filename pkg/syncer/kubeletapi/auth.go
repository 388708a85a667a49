package kubeletapi

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kubeocean/kubeocean/pkg/serving"
)

// Auth authenticates and authorizes kubelet API requests against the
// virtual cluster, like a kubelet in webhook mode: client certificates
// signed by the virtual apiserver's client CA and bearer tokens through
// TokenReview; every request then through a SubjectAccessReview on the
// node's subresource. Anonymous requests are refused.
type Auth = serving.Auth

// check authenticates r and authorizes it on node. It returns nil, or a
// requestError with 401 or 403.
func check(a *Auth, r *http.Request, node string) (user.Info, error) {
	u, err := a.Check(r, func(u user.Info) authorizer.AttributesRecord { return requestAttributes(u, r, node) })
	if err != nil {
		return nil, &requestError{Code: err.Code, Message: err.Message}
	}
	return u, nil
}

// requestAttributes maps a request to the node subresource a kubelet
// checks for it: stats, metrics, log (node logs), and proxy for the rest
// (container logs, exec, attach, port-forward included).
func requestAttributes(u user.Info, r *http.Request, node string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            serving.VerbOf(r.Method),
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
