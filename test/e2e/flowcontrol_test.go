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
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeocean/kubeocean/test/controlplane"
	"github.com/kubeocean/kubeocean/test/stack"
)

// shippedFlowSchema names the shipped FlowSchema of the virtual cluster
// (manifests/rbac/virtual/flowcontrol.yaml); in the physical cluster each
// binding has its own, physicalFlowSchema.
const shippedFlowSchema = "kubeocean"

// physicalFlowSchema is the FlowSchema of the binding's identity in the
// physical cluster (manifests/rbac/physical/flowcontrol.yaml).
var physicalFlowSchema = "kubeocean-syncer." + stack.MountNamespace

// flowSchemaOf names the FlowSchema that classifies Kubeocean's requests in
// cluster.
func flowSchemaOf(cluster *controlplane.Cluster) string {
	if cluster.Name == "physical" {
		return physicalFlowSchema
	}
	return shippedFlowSchema
}

// checkClassified makes one request with the credentials of kubeconfig and
// checks that the API server classified it with the shipped FlowSchema
// (the X-Kubernetes-PF-FlowSchema-UID response header names it).
func checkClassified(t *testing.T, cluster *controlplane.Cluster, kubeconfig string) {
	t.Helper()
	ctx := t.Context()
	schema, err := cluster.Clientset().FlowcontrolV1().FlowSchemas().Get(ctx, flowSchemaOf(cluster), metav1.GetOptions{})
	step(t, "read the shipped FlowSchema in the "+cluster.Name+" cluster", err)
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	step(t, "load "+kubeconfig, err)
	transport, err := rest.TransportFor(config)
	step(t, "transport", err)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, config.Host+"/api", nil)
	step(t, "request", err)
	resp, err := (&http.Client{Transport: transport}).Do(req)
	step(t, "GET /api as Kubeocean in the "+cluster.Name+" cluster", err)
	resp.Body.Close()
	if got := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"); got != string(schema.UID) {
		t.Fatalf("%s cluster: Kubeocean's request was classified by FlowSchema UID %q, want %q (%s)", cluster.Name, got, schema.UID, schema.Name)
	}
}

// checkDispatched checks from the API server's own metrics that at least
// min requests went through the shipped priority level: the binaries'
// traffic of the flow, not only one probe.
func checkDispatched(t *testing.T, cluster *controlplane.Cluster, min float64) {
	t.Helper()
	n, err := dispatched(t, cluster.Clientset(), flowSchemaOf(cluster))
	step(t, "read the "+cluster.Name+" API server's metrics", err)
	if n < min {
		t.Fatalf("%s cluster: %v requests dispatched by FlowSchema %s, want at least %v", cluster.Name, n, flowSchemaOf(cluster), min)
	}
	t.Logf("%s cluster: %v requests dispatched by FlowSchema %s", cluster.Name, n, flowSchemaOf(cluster))
}

func dispatched(t *testing.T, kube kubernetes.Interface, flowSchema string) (float64, error) {
	data, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		return 0, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return 0, err
	}
	family, ok := families["apiserver_flowcontrol_dispatched_requests_total"]
	if !ok {
		return 0, fmt.Errorf("no apiserver_flowcontrol_dispatched_requests_total")
	}
	total := 0.0
	for _, m := range family.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "flow_schema" && l.GetValue() == flowSchema {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total, nil
}
