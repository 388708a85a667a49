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
	"slices"
	"strings"
	"testing"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

// checkAudit compares what Kubeocean's accounts did in a cluster, by its
// audit log, with what the shipped RBAC in rbacDir (plus extraYAML) grants
// them: no request may have been refused, and every grant must have been
// used, except the ones unusedOK lists per account (as grant.String()). An
// account is a ServiceAccount as namespace/name: in the physical cluster
// each binding's identity is audited on its own.
func checkAudit(t *testing.T, cluster *controlplane.Cluster, rbacDir, extraYAML string, unusedOK map[string][]string) {
	t.Helper()
	requests, err := readAudit(cluster.AuditLogPath)
	step(t, "read the audit log of "+cluster.Name, err)
	rendered, err := cluster.Kubectl(t.Context(), "kustomize", testenv.RepoPath(rbacDir))
	step(t, "render "+rbacDir, err)
	objects, err := parseRBAC(rendered + "\n---\n" + extraYAML)
	step(t, "parse "+rbacDir, err)

	for account, allowedUnused := range unusedOK {
		namespace, name, _ := strings.Cut(account, "/")
		user := "system:serviceaccount:" + namespace + ":" + name
		var mine []request
		for _, r := range requests {
			if r.User == user {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			t.Errorf("%s: no request of %s in the audit log", cluster.Name, account)
			continue
		}
		for what, n := range refusedRequests(mine) {
			t.Errorf("%s: %s was refused %d times: %s (missing from %s)", cluster.Name, account, n, what, rbacDir)
		}
		grants, err := objects.grantsOf(namespace, name)
		step(t, "grants of "+account, err)
		if len(grants) == 0 {
			t.Errorf("%s: %s shipped no grant for %s", cluster.Name, rbacDir, account)
		}
		var unused []string
		for _, g := range unusedGrants(grants, mine) {
			if !slices.Contains(allowedUnused, g.String()) {
				unused = append(unused, g.String())
			}
		}
		if len(unused) > 0 {
			t.Errorf("%s: %s grants %s what it never used (remove it, or list it with its reason):\n  %s",
				cluster.Name, rbacDir, account, strings.Join(unused, "\n  "))
		}
		t.Logf("%s: %s made %d requests; %d grants, all used or explained", cluster.Name, account, len(mine), len(grants))
	}
}

// refusedRequests counts the requests answered 403, by what was asked.
func refusedRequests(requests []request) map[string]int {
	refused := map[string]int{}
	for _, r := range requests {
		if r.Code == 403 {
			refused[r.User+": "+r.Verb+" "+r.Resource+" ns="+r.Namespace]++
		}
	}
	return refused
}

// logRefused logs every refused request of a cluster's audit log.
func logRefused(t *testing.T, cluster *controlplane.Cluster) {
	requests, err := readAudit(cluster.AuditLogPath)
	if err != nil {
		t.Logf("%s: reading the audit log: %v", cluster.Name, err)
		return
	}
	for what, n := range refusedRequests(requests) {
		t.Logf("%s: refused %d times: %s", cluster.Name, n, what)
	}
}
