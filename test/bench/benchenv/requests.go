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
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// ScrapeRequests reads a Kubeocean binary's kubeocean_client_requests_total
// from its metrics address, by "cluster verb resource".
func ScrapeRequests(metricsAddr string) (map[string]float64, error) {
	families, err := scrapeFamilies(metricsAddr)
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

// ScrapeGauges reads the gauge name from a Kubeocean binary's metrics
// address, one value per series (by its labels, as text).
func ScrapeGauges(metricsAddr, name string) (map[string]float64, error) {
	families, err := scrapeFamilies(metricsAddr)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, m := range families[name].GetMetric() {
		out[fmt.Sprint(m.GetLabel())] = m.GetGauge().GetValue()
	}
	return out, nil
}

// Heap is a Go binary's heap right after a garbage collection, in bytes:
// the live objects, and the heap spans that hold them. Spans stay in use
// while any object in them lives, so Spans above Objects is the room
// between live objects that the freed garbage left (fragmentation), which
// the RSS pays for as well.
type Heap struct{ Objects, Spans float64 }

// MiB is h in MiB.
func (h Heap) MiB() Heap { return Heap{h.Objects / (1 << 20), h.Spans / (1 << 20)} }

// LiveHeap is the Heap of a Kubeocean binary run with --profiling: what it
// holds, without the garbage a reading at a random time includes.
func LiveHeap(metricsAddr string) (Heap, error) {
	// ?gc=1 collects before the profile is taken.
	resp, err := http.Get("http://" + metricsAddr + "/debug/pprof/heap?gc=1")
	if err != nil {
		return Heap{}, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Heap{}, fmt.Errorf("/debug/pprof/heap: %s (run the binary with --profiling)", resp.Status)
	}
	families, err := scrapeFamilies(metricsAddr)
	if err != nil {
		return Heap{}, err
	}
	h := Heap{Objects: firstGauge(families, "go_memstats_heap_alloc_bytes"), Spans: firstGauge(families, "go_memstats_heap_inuse_bytes")}
	if h.Spans == 0 {
		return h, fmt.Errorf("%s shows no go_memstats_heap_inuse_bytes", metricsAddr)
	}
	return h, nil
}

// firstGauge is the value of the first series of the gauge family name, 0
// without one.
func firstGauge(families map[string]*dto.MetricFamily, name string) float64 {
	for _, m := range families[name].GetMetric() {
		return m.GetGauge().GetValue()
	}
	return 0
}

// scrapeFamilies reads the metrics a Kubeocean binary serves on plain
// HTTP at metricsAddr.
func scrapeFamilies(metricsAddr string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
}

// Histogram is the sum and count of one series of a histogram, with its
// cumulative bucket counts by upper bound.
type Histogram struct {
	Sum, Count float64
	Buckets    map[float64]float64
}

// Quantile estimates the q-quantile (0 < q ≤ 1) from the buckets, as
// Prometheus' histogram_quantile does: linear within the bucket the rank
// falls in, the first bucket starting at 0. A rank above the highest
// finite bound answers that bound; nothing observed answers 0.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Buckets) == 0 {
		return 0
	}
	rank := q * h.Count
	lower, below := 0.0, 0.0
	for _, upper := range slices.Sorted(maps.Keys(h.Buckets)) {
		count := h.Buckets[upper]
		if count >= rank {
			if math.IsInf(upper, 1) {
				return lower
			}
			if count == below {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/(count-below)
		}
		lower, below = upper, count
	}
	return lower
}

// Mean is Sum/Count; 0 when nothing was observed.
func (h Histogram) Mean() float64 {
	if h.Count == 0 {
		return 0
	}
	return h.Sum / h.Count
}

// ScrapeHistograms reads the histogram name from a Kubeocean binary's
// metrics address, by the values of labels joined with spaces.
func ScrapeHistograms(metricsAddr, name string, labels ...string) (map[string]Histogram, error) {
	families, err := scrapeFamilies(metricsAddr)
	if err != nil {
		return nil, err
	}
	out := map[string]Histogram{}
	for _, m := range families[name].GetMetric() {
		values := map[string]string{}
		for _, l := range m.GetLabel() {
			values[l.GetName()] = l.GetValue()
		}
		var key string
		for i, l := range labels {
			if i > 0 {
				key += " "
			}
			key += values[l]
		}
		h := out[key]
		h.Sum += m.GetHistogram().GetSampleSum()
		h.Count += float64(m.GetHistogram().GetSampleCount())
		for _, b := range m.GetHistogram().GetBucket() {
			if h.Buckets == nil {
				h.Buckets = map[float64]float64{}
			}
			h.Buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
		out[key] = h
	}
	return out, nil
}

// DiffHistograms is after minus before, keeping the series that observed
// something in between.
func DiffHistograms(before, after map[string]Histogram) map[string]Histogram {
	out := map[string]Histogram{}
	for k, v := range after {
		d := Histogram{Sum: v.Sum - before[k].Sum, Count: v.Count - before[k].Count}
		for upper, count := range v.Buckets {
			if d.Buckets == nil {
				d.Buckets = map[float64]float64{}
			}
			d.Buckets[upper] = count - before[k].Buckets[upper]
		}
		if d.Count > 0 {
			out[k] = d
		}
	}
	return out
}

// Memory is where a Go binary's memory goes, in MiB, from the Go
// collector's gauges: the heap spans in use (live objects and garbage not
// yet collected), free heap the runtime still holds (not yet returned to the
// system), goroutine stacks, and everything else the runtime took; and,
// when the caller reads it (Syncer.FileRSS), the resident pages of the
// binary itself.
type Memory struct{ HeapInUse, HeapFree, Stacks, Other, Binary float64 }

// ScrapeMemory reads Memory from a Kubeocean binary's metrics address.
func ScrapeMemory(metricsAddr string) (Memory, error) {
	families, err := scrapeFamilies(metricsAddr)
	if err != nil {
		return Memory{}, err
	}
	gauge := func(name string) float64 { return firstGauge(families, name) / (1 << 20) }
	m := Memory{
		HeapInUse: gauge("go_memstats_heap_inuse_bytes"),
		HeapFree:  gauge("go_memstats_heap_idle_bytes") - gauge("go_memstats_heap_released_bytes"),
		Stacks:    gauge("go_memstats_stack_inuse_bytes"),
	}
	m.Other = gauge("go_memstats_sys_bytes") - gauge("go_memstats_heap_sys_bytes") - m.Stacks
	return m, nil
}

func (m Memory) String() string {
	return fmt.Sprintf("%.1f / %.1f / %.1f / %.1f / %.1f", m.HeapInUse, m.HeapFree, m.Stacks, m.Other, m.Binary)
}
