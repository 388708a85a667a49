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
	"math"
	"testing"
)

func TestHistogramQuantile(t *testing.T) {
	// 100 observations: 50 up to 0.1 s, 40 in (0.1, 0.5], 10 in (0.5, 1].
	h := Histogram{Count: 100, Buckets: map[float64]float64{0.1: 50, 0.5: 90, 1: 100, math.Inf(1): 100}}
	for _, tt := range []struct{ q, want float64 }{
		{0.5, 0.1},   // the rank ends the first bucket
		{0.25, 0.05}, // halfway into the first bucket, from 0
		{0.7, 0.3},   // halfway into (0.1, 0.5]
		{0.99, 0.95}, // nine tenths into (0.5, 1]
	} {
		if got := h.Quantile(tt.q); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	// Observations beyond the highest finite bound answer that bound.
	h = Histogram{Count: 10, Buckets: map[float64]float64{1: 5, math.Inf(1): 10}}
	if got := h.Quantile(0.99); got != 1 {
		t.Errorf("Quantile beyond the last finite bound = %v, want 1", got)
	}
	if got := (Histogram{}).Quantile(0.99); got != 0 {
		t.Errorf("Quantile of nothing = %v, want 0", got)
	}
}

func TestDiffHistogramsSubtractsBuckets(t *testing.T) {
	before := map[string]Histogram{"a": {Sum: 1, Count: 2, Buckets: map[float64]float64{1: 2}}}
	after := map[string]Histogram{"a": {Sum: 4, Count: 5, Buckets: map[float64]float64{1: 4, 2: 5}}}
	d := DiffHistograms(before, after)["a"]
	if d.Count != 3 || d.Buckets[1] != 2 || d.Buckets[2] != 5 {
		t.Errorf("diff = %+v, want count 3, buckets {1: 2, 2: 5}", d)
	}
}
