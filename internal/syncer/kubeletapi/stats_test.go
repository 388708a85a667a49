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
	"encoding/json"
	"strings"
	"testing"
)

var mapped = map[string]virtualRef{
	"mount/web-abc": {Namespace: "a", Name: "web", UID: "vuid"},
}

func TestRewriteSummary(t *testing.T) {
	raw := `{"node":{"nodeName":"phys-1","cpu":{"usageNanoCores":5}},"pods":[
	  {"podRef":{"name":"web-abc","namespace":"mount","uid":"puid"},"cpu":{"usageNanoCores":3}},
	  {"podRef":{"name":"theirs","namespace":"other","uid":"x"},"cpu":{"usageNanoCores":1}}]}`
	out, err := rewriteSummary([]byte(raw), "vnode-c1-phys-1", mapped)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Node struct {
			NodeName string `json:"nodeName"`
			CPU      struct {
				UsageNanoCores int `json:"usageNanoCores"`
			} `json:"cpu"`
		} `json:"node"`
		Pods []struct {
			PodRef podReference `json:"podRef"`
			CPU    struct {
				UsageNanoCores int `json:"usageNanoCores"`
			} `json:"cpu"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Node.NodeName != "vnode-c1-phys-1" || got.Node.CPU.UsageNanoCores != 5 {
		t.Errorf("node %+v", got.Node)
	}
	if len(got.Pods) != 1 || got.Pods[0].PodRef != (podReference{Name: "web", Namespace: "a", UID: "vuid"}) || got.Pods[0].CPU.UsageNanoCores != 3 {
		t.Errorf("pods %+v, want only web renamed with its figures", got.Pods)
	}
}

func TestRewriteResourceMetrics(t *testing.T) {
	raw := `# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",namespace="mount",pod="web-abc"} 1.5 1700000000000
container_cpu_usage_seconds_total{container="x",namespace="other",pod="theirs"} 9 1700000000000
# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time
# TYPE node_cpu_usage_seconds_total counter
node_cpu_usage_seconds_total 42 1700000000000
# HELP pod_memory_working_set_bytes [STABLE] working set
# TYPE pod_memory_working_set_bytes gauge
pod_memory_working_set_bytes{namespace="other",pod="theirs"} 7 1700000000000
`
	out, err := rewriteResourceMetrics([]byte(raw), mapped)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{
		`container_cpu_usage_seconds_total{container="app",namespace="a",pod="web"} 1.5 1700000000000`,
		`node_cpu_usage_seconds_total 42 1700000000000`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	for _, unwanted := range []string{"theirs", "web-abc", "mount", "pod_memory_working_set_bytes"} {
		if strings.Contains(text, unwanted) {
			t.Errorf("%q leaked into\n%s", unwanted, text)
		}
	}
}
