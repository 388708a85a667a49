package leaderelection

import (
	"os"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMain installs the metrics provider before any test creates an elector:
// client-go reads the provider without synchronisation, so setting it while
// parallel tests run electors would be a data race.
func TestMain(m *testing.M) {
	if err := RegisterMetrics(prometheus.NewRegistry()); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
