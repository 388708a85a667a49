package benchenv

import (
	"bytes"
	"context"
	"fmt"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// ScrapeAPIServerRequests reads an API server's own apiserver_request_total,
// by "VERB resource[/subresource] code", so that a benchmark counts the
// requests the server saw, whoever made them.
func ScrapeAPIServerRequests(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	data, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		resource := labels["resource"]
		if sub := labels["subresource"]; sub != "" {
			resource += "/" + sub
		}
		out[labels["verb"]+" "+resource+" "+labels["code"]] += m.GetCounter().GetValue()
	}
	return out, nil
}

// CPUSeconds is the CPU time the syncer's process has used so far.
func (s *Syncer) CPUSeconds() (float64, error) {
	ticks, err := cpuTicks(s.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return float64(ticks) / ticksPerSecond, nil
}

// ticksPerSecond is USER_HZ on Linux, the unit of /proc/<pid>/stat times.
const ticksPerSecond = 100
