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

package kubeletapi

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/kubeocean/kubeocean/internal/serving"
)

// Auth authenticates and authorizes kubelet API requests against the
// virtual cluster, like a kubelet in webhook mode: client certificates
// signed by the virtual apiserver's client CA and bearer tokens through
// TokenReview; every request then through a SubjectAccessReview on the
// node's subresource. Anonymous requests are refused.
type Auth = serving.Auth

// check authenticates r and authorizes it on node for the operation op
// that serves it. It returns nil, or a requestError with 401 or 403.
func check(a *Auth, r *http.Request, node, op string) (user.Info, error) {
	u, err := a.Check(r, func(u user.Info) authorizer.AttributesRecord { return requestAttributes(u, r, node, op) })
	if err != nil {
		return nil, &requestError{Code: err.Code, Message: err.Message}
	}
	return u, nil
}

// requestAttributes maps a request to the node subresource a kubelet
// checks for it: stats, metrics, log (node logs), and proxy for the rest
// (container logs, exec, attach, port-forward included), with the verb of
// the method, except for streams (see verbOf).
func requestAttributes(u user.Info, r *http.Request, node, op string) authorizer.AttributesRecord {
	return authorizer.AttributesRecord{
		User:            u,
		Verb:            verbOf(r.Method, op),
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

// verbOf is create for exec, attach and port-forward whatever the method:
// they run commands in a container or reach its ports, and a WebSocket
// client opens them with a GET, so the verb of the method would let
// anyone with get nodes/proxy (a common grant of monitoring identities)
// run commands in every pod of the node. Other paths take the verb of the
// method, as a kubelet does. The verb follows the handler that serves
// the request, not a reading of its path.
func verbOf(method, op string) string {
	if isStream(op) {
		return "create"
	}
	return serving.VerbOf(method)
}

// isStream tells the operations that hand the connection over to a
// stream.
func isStream(op string) bool {
	return op == opExec || op == opAttach || op == opPortForward
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
