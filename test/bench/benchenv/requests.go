package benchenv

import (
	"net/http"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ScrapeRequests reads a Kubeocean binary's kubeocean_client_requests_total
// from its metrics address, by "cluster verb resource".
func ScrapeRequests(metricsAddr string) (map[string]float64, error) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	family, ok := families["kubeocean_client_requests_total"]
	if !ok {
		return out, nil
	}
	for _, m := range family.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out[labels["cluster"]+" "+labels["verb"]+" "+labels["resource"]] += m.GetCounter().GetValue() // summed over codes
	}
	return out, nil
}

// DiffRequests is after minus before, keeping what grew.
func DiffRequests(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
