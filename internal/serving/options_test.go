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
