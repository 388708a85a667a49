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

package app

import (
	"runtime/debug"
	"testing"

	"k8s.io/klog/v2"
)

func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	noEnv := func(string) string { return "" }
	gogc := func(k string) string {
		if k == "GOGC" {
			return "200"
		}
		return ""
	}
	current := func() int {
		v := debug.SetGCPercent(100)
		debug.SetGCPercent(v)
		return v
	}
	tests := []struct {
		name   string
		args   []string
		getenv func(string) string
		want   int
	}{
		{"the default", nil, noEnv, DefaultGCPercent},
		{"GOGC over the default", nil, gogc, 100}, // the runtime reads GOGC itself; Apply leaves it alone
		{"the flag", []string{"--gc-percent=80"}, noEnv, 80},
		{"the flag over GOGC", []string{"--gc-percent=80"}, gogc, 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			opts := NewOptions("kubeocean-syncer")
			fs := Command{Options: opts}.Flags()
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			opts.GC.Apply(klog.Background(), tt.getenv)
			if got := current(); got != tt.want {
				t.Fatalf("GC percent %d, want %d", got, tt.want)
			}
		})
	}

	fs := Command{Options: NewOptions("kubeocean-syncer")}.Flags()
	for _, bad := range []string{"--gc-percent=0", "--gc-percent=off"} {
		if err := fs.Parse([]string{bad}); err == nil {
			t.Fatalf("%s was accepted", bad)
		}
	}
}
