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
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

func TestRunRejectsInvalidOptions(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Options)
		wantErr string
	}{
		{name: "no lease name", edit: func(o *Options) { o.LeaseName = "" }, wantErr: "lease name is required"},
		{name: "no lease namespace", edit: func(o *Options) { o.LeaseNamespace = "" }, wantErr: "lease namespace is required"},
		{
			name:    "renew deadline not below lease duration",
			edit:    func(o *Options) { o.RenewDeadline = o.LeaseDuration },
			wantErr: "leaseDuration must be greater than renewDeadline",
		},
		{
			name:    "retry period too close to renew deadline",
			edit:    func(o *Options) { o.RetryPeriod = o.RenewDeadline },
			wantErr: "renewDeadline must be greater than retryPeriod",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions("invalid", "me")
			tt.edit(&opts)
			_, ctx := ktesting.NewTestContext(t)
			ran := false

			err := Run(ctx, fake.NewClientset(), opts, func(context.Context) { ran = true })

			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Run = %v, want an error containing %q", err, tt.wantErr)
			}
			if ran {
				t.Error("work ran despite invalid options")
			}
		})
	}
}

func TestOptionsCompletedFillsDefaults(t *testing.T) {
	opts, err := Options{Enabled: true, LeaseName: "kubeocean-manager", LeaseNamespace: "kubeocean-system"}.completed()
	if err != nil {
		t.Fatal(err)
	}

	hostname, _ := os.Hostname()
	if !strings.HasPrefix(opts.Identity, hostname+"_") || len(opts.Identity) <= len(hostname)+1 {
		t.Errorf("identity = %q, want %q followed by a unique suffix", opts.Identity, hostname+"_")
	}
	if opts.LeaseDuration != 15*time.Second || opts.RenewDeadline != 10*time.Second || opts.RetryPeriod != 2*time.Second {
		t.Errorf("durations = %v/%v/%v, want 15s/10s/2s", opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod)
	}
	other, _ := DefaultIdentity()
	if other == opts.Identity {
		t.Error("two default identities are equal")
	}
}

func TestOptionsAddFlags(t *testing.T) {
	opts := Options{LeaseName: "kubeocean-manager"}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	opts.AddFlags(fs)

	err := fs.Parse([]string{
		"--leader-elect", "--leader-elect-resource-namespace=kubeocean-system",
		"--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s", "--leader-elect-retry-period=4s",
	})

	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		Enabled: true, LeaseName: "kubeocean-manager", LeaseNamespace: "kubeocean-system",
		LeaseDuration: 30 * time.Second, RenewDeadline: 20 * time.Second, RetryPeriod: 4 * time.Second,
	}
	if opts != want {
		t.Errorf("options = %+v, want %+v", opts, want)
	}
}
