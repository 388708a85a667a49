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

package benchenv

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeocean/kubeocean/test/controlplane"
)

// APIRequest is one series of an apiserver's apiserver_request_total: verb
// as the apiserver reports it (POST, PUT, PATCH, DELETE, GET of one object,
// LIST, WATCH), resource with its subresource ("pods/status") and HTTP
// code.
type APIRequest struct {
	Verb, Resource, Code string
}

func (r APIRequest) String() string { return r.Verb + " " + r.Resource + " " + r.Code }

// APIRequests counts an apiserver's requests by series.
type APIRequests map[APIRequest]float64

// ScrapeAPIServer reads the apiserver's own apiserver_request_total from
// its /metrics: every client's requests, whatever its client-side counters
// say.
func ScrapeAPIServer(ctx context.Context, c *controlplane.Cluster) (APIRequests, error) {
	kube, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return nil, err
	}
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of %s's apiserver: %w", c.Name, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing the metrics of %s's apiserver: %w", c.Name, err)
	}
	out := APIRequests{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		resource := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		if resource == "" {
			resource = "(none)" // /healthz, /metrics, discovery
		}
		out[APIRequest{Verb: labels["verb"], Resource: resource, Code: labels["code"]}] += m.GetCounter().GetValue()
	}
	return out, nil
}

// Sub is r minus before, keeping what grew.
func (r APIRequests) Sub(before APIRequests) APIRequests {
	out := APIRequests{}
	for k, v := range r {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total sums the series that match.
func (r APIRequests) Total(match func(APIRequest) bool) float64 {
	var sum float64
	for k, v := range r {
		if match(k) {
			sum += v
		}
	}
	return sum
}

// IsWatch tells the long-running WATCH requests, which count connections
// rather than work.
func IsWatch(r APIRequest) bool { return r.Verb == "WATCH" }

// IsConflict tells the 409s: a conflict on update, AlreadyExists on create.
func IsConflict(r APIRequest) bool { return r.Code == "409" }

// PrintAPIRequests prints per series the requests per unit of each phase,
// side by side (e.g. the syncer's phase beside its floor's); series with
// nothing in any phase are left out, and so are WATCHes and the requests
// without a resource (health and metrics probes).
func PrintAPIRequests(title string, phases []string, requests []APIRequests, per []float64) {
	keys := map[APIRequest]bool{}
	for _, r := range requests {
		for k := range r {
			if !IsWatch(k) && k.Resource != "(none)" {
				keys[k] = true
			}
		}
	}
	fmt.Printf("\n%s\n", title)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "verb\tresource\tcode\t"+strings.Join(phases, "\t"))
	sorted := slices.SortedFunc(maps.Keys(keys), func(a, b APIRequest) int {
		return strings.Compare(a.Resource+" "+a.Verb+" "+a.Code, b.Resource+" "+b.Verb+" "+b.Code)
	})
	for _, k := range sorted {
		row := []string{k.Verb, k.Resource, k.Code}
		for i, r := range requests {
			row = append(row, fmt.Sprintf("%.3f", r[k]/per[i]))
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	row := []string{"all", "but watches", ""}
	for i, r := range requests {
		row = append(row, fmt.Sprintf("%.3f", r.Total(func(k APIRequest) bool { return !IsWatch(k) && k.Resource != "(none)" })/per[i]))
	}
	fmt.Fprintln(w, strings.Join(row, "\t"))
	w.Flush()
}
