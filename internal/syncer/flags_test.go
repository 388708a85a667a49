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

package syncer

import (
	"strings"
	"testing"
	"time"

	"github.com/kubeocean/kubeocean/internal/app"
)

func TestFlags(t *testing.T) {
	parse := func(args ...string) (Options, error) {
		opts := Options{Workers: 4, PodWorkers: 128, NodeWorkers: 32, PhysicalQPS: 300, PhysicalBurst: 600, Kubelet: NewKubeletOptions()}
		err := app.Command{Options: app.NewOptions(Component), AddFlags: opts.AddFlags}.Flags().Parse(args)
		if err == nil {
			err = opts.Validate()
		}
		return opts, err
	}
	opts, err := parse("--cluster-binding=b", "--workers=2", "--pod-workers=8", "--node-workers=3",
		"--physical-kube-api-qps=12.5", "--physical-kube-api-burst=25", "--virtual-apiserver-address=10.0.0.1:443")
	if err != nil {
		t.Fatal(err)
	}
	if opts.NodeStatusUpdateInterval != time.Second {
		t.Errorf("--node-status-update-interval defaults to %v, want 1s", opts.NodeStatusUpdateInterval)
	}
	if opts.BindingName != "b" || opts.Workers != 2 || opts.PodWorkers != 8 || opts.NodeWorkers != 3 ||
		opts.PhysicalQPS != 12.5 || opts.PhysicalBurst != 25 || opts.VirtualAPIServer != "10.0.0.1:443" {
		t.Fatalf("flags not applied: %+v", opts)
	}
	for args, want := range map[string]string{
		"--cluster-binding=b --workers=-3":               `"--workers" flag: must be at least 1`,
		"--cluster-binding=b --pod-workers=0":            `"--pod-workers" flag: must be at least 1`,
		"--cluster-binding=b --physical-kube-api-qps=-5": `"--physical-kube-api-qps" flag: must be greater than 0`,
		"--cluster-binding=b --physical-kube-api-qps=x":  `"--physical-kube-api-qps" flag: not a number`,
		"--workers=2": "--cluster-binding is required",
		"--cluster-binding=b --node-status-update-interval=-1s": "--node-status-update-interval must not be negative",
		"--cluster-binding=b --outage-lease-renewal-limit=-1m":  "--outage-lease-renewal-limit must not be negative",
	} {
		if _, err := parse(strings.Fields(args)...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", args, err, want)
		}
	}
}
