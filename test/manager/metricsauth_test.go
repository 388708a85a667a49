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

package manager

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeocean/kubeocean/test/testenv"
)

// checkSecureMetrics runs the built manager with --metrics-secure and
// --profiling: /metrics and /debug/pprof are served over HTTPS only to
// callers the virtual apiserver authenticates (a ServiceAccount token, or
// a certificate of its client CA) and authorizes for the path, with the
// shipped ClusterRole kubeocean-metrics-reader granting /metrics alone;
// the health probes stay plain and open.
func checkSecureMetrics(t *testing.T, binary string) {
	ctx := t.Context()
	kube := virtualCluster.Clientset()
	createNamespace(t, kube, systemNamespace)
	metrics, health := freeAddr(t), freeAddr(t)
	cmd := exec.Command(binary, "--kubeconfig="+virtualCluster.KubeconfigPath, "--syncer-mode=in-process",
		"--metrics-bind-address="+metrics, "--metrics-secure", "--profiling", "--health-probe-bind-address="+health)
	logs := &lineBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("manager log:\n%s", strings.Join(logs.Lines(), "\n"))
		}
	})

	// Who asks: nobody (a token whose account has no role), a reader (the
	// shipped ClusterRole), a profiler (a role of /debug/pprof/*).
	shippedReader := readClusterRole(t, "manifests/rbac/virtual/metrics-reader.yaml")
	profiler := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "test-kubeocean-profiler"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/debug/pprof/*"}, Verbs: []string{"get"}}}}
	for _, role := range []*rbacv1.ClusterRole{shippedReader, profiler} {
		if _, err := kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
		})
	}
	tokens := map[string]string{}
	for account, role := range map[string]string{"metrics-nobody": "", "metrics-reader": shippedReader.Name, "metrics-profiler": profiler.Name} {
		token, err := virtualCluster.ServiceAccountToken(ctx, systemNamespace, account)
		if err != nil {
			t.Fatal(err)
		}
		tokens[account] = token
		if role == "" {
			continue
		}
		binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "test-" + account},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: systemNamespace, Name: account}}}
		if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = kube.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
			_ = kube.CoreV1().ServiceAccounts(systemNamespace).Delete(context.Background(), account, metav1.DeleteOptions{})
		})
	}

	waitFor(t, 30*time.Second, "the health probes answer, in plain HTTP without credentials", func(context.Context) (bool, error) {
		status, _ := httpGet("http://" + health + "/healthz")
		return status == http.StatusOK, nil
	})
	if status, body := httpGet("http://" + metrics + "/metrics"); status != http.StatusBadRequest {
		t.Errorf("plain HTTP to the metrics address: %d %q, want 400 (TLS only)", status, body)
	}
	certFile, keyFile := virtualCluster.KubeletClientCertificate()
	clientCert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who, path string
		want      int
		wantBody  string
	}{
		{"anonymous", "/metrics", http.StatusUnauthorized, "Unauthorized"},
		{"anonymous", "/debug/pprof/", http.StatusUnauthorized, "Unauthorized"},
		{"forged", "/metrics", http.StatusUnauthorized, "Unauthorized"},
		{"metrics-nobody", "/metrics", http.StatusForbidden, "Forbidden (user=system:serviceaccount:kubeocean-system:metrics-nobody, verb=get, path=/metrics)"},
		{"metrics-nobody", "/debug/pprof/", http.StatusForbidden, "Forbidden"},
		{"metrics-reader", "/metrics", http.StatusOK, "kubeocean_build_info{"},
		{"metrics-reader", "/debug/pprof/", http.StatusForbidden, "path=/debug/pprof/"},
		{"metrics-profiler", "/metrics", http.StatusForbidden, "Forbidden"},
		{"metrics-profiler", "/debug/pprof/", http.StatusOK, "goroutine"},
		{"metrics-profiler", "/debug/pprof/cmdline", http.StatusOK, "--metrics-secure"},
		// The apiserver's own client certificate (system:masters), verified
		// against the client CA the apiserver publishes.
		{"client certificate", "/metrics", http.StatusOK, "kubeocean_build_info{"},
	} {
		var status int
		var body string
		// The first answers wait for the server and its client CA.
		waitFor(t, 30*time.Second, tc.who+" GET "+tc.path, func(ctx context.Context) (bool, error) {
			var cert *tls.Certificate
			token := tokens[tc.who]
			switch tc.who {
			case "forged":
				token = "not-a-token"
			case "client certificate":
				cert = &clientCert
			}
			status, body = httpsGet(ctx, "https://"+metrics+tc.path, token, cert)
			return status == tc.want, nil
		})
		if status != tc.want || !strings.Contains(body, tc.wantBody) {
			t.Errorf("%s GET %s: %d %.300q, want %d with %q", tc.who, tc.path, status, body, tc.want, tc.wantBody)
		}
	}
}

// httpsGet calls url with an optional bearer token and client certificate,
// not checking the serving certificate (self-signed by default).
func httpsGet(ctx context.Context, url, token string, cert *tls.Certificate) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	config := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // self-signed serving certificate
	if cert != nil {
		config.Certificates = []tls.Certificate{*cert}
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: config}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func readClusterRole(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	data, err := os.ReadFile(testenv.RepoPath(path))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &role); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &role
}
