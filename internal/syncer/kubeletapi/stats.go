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
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// The stats of a virtual node are the physical node's, as its kubelet
// reports them through the physical apiserver's nodes/proxy, reduced to
// the binding's pods and renamed to their virtual names: a user of the
// virtual cluster neither sees the physical cluster's other pods nor
// learns the mapped names. The node's own figures stay those of the
// machine.

// summary is the part of the kubelet's stats/summary that is rewritten;
// everything else passes through unparsed.
type summary struct {
	Node map[string]json.RawMessage   `json:"node"`
	Pods []map[string]json.RawMessage `json:"pods"`
}

type podReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
}

// rewriteSummary filters and renames the pods of a stats/summary and names
// the node after the virtual node.
func rewriteSummary(raw []byte, virtualNode string, pods map[string]virtualRef) ([]byte, error) {
	var in summary
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("decoding the physical node's stats summary: %w", err)
	}
	out := summary{Node: in.Node, Pods: []map[string]json.RawMessage{}}
	if out.Node != nil {
		name, _ := json.Marshal(virtualNode)
		out.Node["nodeName"] = name
	}
	for _, pod := range in.Pods {
		var ref podReference
		if err := json.Unmarshal(pod["podRef"], &ref); err != nil {
			continue
		}
		virtual, ok := pods[ref.Namespace+"/"+ref.Name]
		if !ok {
			continue
		}
		renamed, err := json.Marshal(podReference{Name: virtual.Name, Namespace: virtual.Namespace, UID: virtual.UID})
		if err != nil {
			return nil, err
		}
		pod["podRef"] = renamed
		out.Pods = append(out.Pods, pod)
	}
	return json.Marshal(out)
}

// rewriteResourceMetrics filters and renames the pod and container series
// of /metrics/resource (labels namespace and pod); series without a pod
// label (the node's, scrape_error) stay.
func rewriteResourceMetrics(raw []byte, pods map[string]virtualRef) ([]byte, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decoding the physical node's resource metrics: %w", err)
	}
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	encoder := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, name := range names {
		family := families[name]
		kept := family.Metric[:0]
		for _, m := range family.Metric {
			if renameSeries(m, pods) {
				kept = append(kept, m)
			}
		}
		if len(kept) == 0 {
			continue
		}
		family.Metric = kept
		if err := encoder.Encode(family); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// renameSeries renames a pod's series to its virtual pod and reports
// whether to keep it.
func renameSeries(m *dto.Metric, pods map[string]virtualRef) bool {
	var namespace, pod *dto.LabelPair
	for _, l := range m.Label {
		switch l.GetName() {
		case "namespace":
			namespace = l
		case "pod":
			pod = l
		}
	}
	if pod == nil {
		return true
	}
	if namespace == nil {
		return false
	}
	virtual, ok := pods[namespace.GetValue()+"/"+pod.GetValue()]
	if !ok {
		return false
	}
	namespace.Value, pod.Value = &virtual.Namespace, &virtual.Name
	return true
}

// NodeStatsNotGranted is the answer to stats/summary and metrics/resource
// while the syncer's physical identity lacks get nodes/proxy.
const NodeStatsNotGranted = "node stats are not granted in the physical cluster: its administrator grants them with " +
	"manifests/rbac/physical-node-stats (get nodes/proxy); or run the syncer with --kubelet-node-stats=false"

// serveStats answers stats/summary and metrics/resource from the physical
// node's, through the physical apiserver's nodes/proxy.
func (s *nodeServer) serveStats(w http.ResponseWriter, r *http.Request, path string) error {
	if !s.statsEnabled {
		return &requestError{Code: http.StatusNotFound, Message: "node stats are disabled on this syncer (--kubelet-node-stats=false)"}
	}
	physicalNode, err := s.physicalNode()
	if err != nil {
		return err
	}
	raw, err := s.physical.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", physicalNode, "proxy", path).DoRaw(r.Context())
	if apierrors.IsForbidden(err) {
		// The grant is the physical administrator's opt-in: say what is
		// missing rather than report a failing physical cluster.
		return &requestError{Code: http.StatusServiceUnavailable, Message: NodeStatsNotGranted}
	}
	if apierrors.IsNotFound(err) {
		// The physical kubelet has no such endpoint (kwok without its
		// metrics configured, a kubelet that turned it off): nothing
		// Kubeocean or the user can retry, so not a failing gateway.
		return &requestError{Code: http.StatusNotFound, Message: fmt.Sprintf(
			"physical node %s does not serve %s: its kubelet answered 404 Not Found", physicalNode, path)}
	}
	if err != nil {
		klog.FromContext(r.Context()).Error(err, "Physical cluster call failed", "operation", "stats", "path", path,
			"physicalNode", physicalNode, "node", s.node)
		return &requestError{Code: http.StatusBadGateway, Message: fmt.Sprintf("physical node %s: %v", physicalNode, err)}
	}
	pods, err := s.resolver.virtualPodsOn(physicalNode)
	if err != nil {
		return err
	}
	var body []byte
	contentType := "application/json"
	if path == "stats/summary" {
		body, err = rewriteSummary(raw, s.node, pods)
	} else {
		body, err = rewriteResourceMetrics(raw, pods)
		contentType = string(expfmt.NewFormat(expfmt.TypeTextPlain))
	}
	if err != nil {
		return &requestError{Code: http.StatusBadGateway, Message: err.Error()}
	}
	w.Header().Set("Content-Type", contentType)
	n, _ := w.Write(body)
	s.metrics.bytes.WithLabelValues(opStats).Add(float64(n))
	return nil
}
