package serving

import (
	"testing"

	"github.com/spf13/pflag"
)

func TestOptionsAddFlags(t *testing.T) {
	tests := []struct {
		name        string
		args        []string
		wantMetrics string
		wantHealth  string
	}{
		{name: "defaults", wantMetrics: ":8080", wantHealth: ":8081"},
		{
			name:        "overridden",
			args:        []string{"--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:9440"},
			wantMetrics: "0",
			wantHealth:  "127.0.0.1:9440",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := NewOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			opts.AddFlags(fs)

			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}

			if opts.MetricsBindAddress != tt.wantMetrics || opts.HealthProbeBindAddress != tt.wantHealth {
				t.Errorf("got %+v", opts)
			}
		})
	}
}
