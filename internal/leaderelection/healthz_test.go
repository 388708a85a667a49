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
