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

package leaderelection

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubeocean/kubeocean/internal/serving"
)

func TestHealthzAdaptorServedByServing(t *testing.T) {
	t.Parallel()
	adaptor := NewHealthzAdaptor(DefaultHealthzTimeout)
	health := serving.NewHealth()
	health.AddHealthz(serving.CheckFrom(adaptor))
	client := newLeaseClient()
	_, ctx := ktesting.NewTestContext(t)
	opts := testOptions("healthz", "me")
	opts.Healthz = adaptor
	checked := make(chan int, 1)

	err := Run(ctx, client, opts, func(context.Context) {
		recorder := httptest.NewRecorder()
		health.Handler().ServeHTTP(recorder, httptest.NewRequest("GET", "/healthz/leaderElection", nil))
		checked <- recorder.Code
	})

	if err != nil {
		t.Fatal(err)
	}
	if code := waitFor(t, checked, time.Second, "the check"); code != 200 {
		t.Errorf("GET /healthz/leaderElection while leading = %d, want 200", code)
	}
}

func TestRegisterMetricsReportsLeadership(t *testing.T) {
	t.Parallel()
	registry := prometheus.NewRegistry()
	if err := RegisterMetrics(registry); err != nil {
		t.Fatal(err)
	}
	client := newLeaseClient()
	_, ctx := ktesting.NewTestContext(t)
	var whileLeading float64

	err := Run(ctx, client, testOptions("metrics", "me"), func(context.Context) {
		whileLeading = testutil.ToFloat64(leaderStatus.WithLabelValues("metrics"))
	})

	if err != nil {
		t.Fatal(err)
	}
	if whileLeading != 1 {
		t.Errorf("leader_election_master_status while leading = %v, want 1", whileLeading)
	}
	if n, err := testutil.GatherAndCount(registry, "leader_election_master_status"); err != nil || n == 0 {
		t.Errorf("registry does not export the metric: %d, %v", n, err)
	}
}
