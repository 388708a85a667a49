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

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeocean/kubeocean/test/stack"
)

// scrapeKubeoceanMetrics reads /metrics of every running binary as
// Prometheus does with the shipped setup: over HTTPS (--metrics-secure of
// the shipped Deployments), with the token of a ServiceAccount bound to the
// shipped ClusterRole kubeocean-metrics-reader. Without a token it is
// refused. The binaries check the token with their own identity, which
// uses the TokenReview and SubjectAccessReview grants of the shipped RBAC.
func scrapeKubeoceanMetrics(t *testing.T, binaries []*stack.Binary) {
	ctx, s := t.Context(), world
	const account = "prometheus"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-kubeocean-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubeocean-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: account}},
	}
	_, err := s.VirtualKube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	step(t, "bind kubeocean-metrics-reader to "+account, err)
	token, err := s.Virtual.ServiceAccountToken(ctx, "default", account)
	step(t, "token of "+account, err)
	for _, b := range binaries {
		url := "https://" + b.MetricsAddress + "/metrics"
		if code, body := kubeletGet(t, url, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without credentials: %d %.200s, want 401", url, code, body)
		}
		waitFor(t, "a metrics reader scrapes "+url, func(context.Context) (string, error) {
			code, body := kubeletGet(t, url, token)
			if code != http.StatusOK || !strings.Contains(body, "kubeocean_build_info{") {
				return fmt.Sprintf("%d %.200s", code, body), nil
			}
			return "", nil
		})
	}
}
