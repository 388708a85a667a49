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

// Package manager tests kubeocean-manager on real clusters: a virtual
// cluster with kube-controller-manager (garbage collection, ReplicaSets,
// node lifecycle) and a physical cluster whose nodes kwok runs. The
// clusters are shared by the tests of this package, which run one after
// the other, each with its own managers, bindings, cluster IDs and nodes,
// and each removing its bindings before its managers stop, so no manager
// sees another test's bindings.
package manager

import (
	"os"
	"testing"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/testenv"
)

var virtualCluster, physicalCluster *controlplane.Cluster

// secretsAuditPolicy logs who lists and watches Secrets in the virtual
// cluster, and how (see TestManagerCachesOnlyWhatItsBindingsUse).
var secretsAuditPolicy = []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["list", "watch"]
  resources: [{group: "", resources: ["secrets"]}]
- level: None
`)

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, controlplane.Options{ControllerManager: true, AuditPolicy: secretsAuditPolicy}, controlplane.Options{Kwok: true},
		func(v, p *controlplane.Cluster) { virtualCluster, physicalCluster = v, p }))
}
