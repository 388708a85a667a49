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
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestKubeletPortsAreProcessWide: the manager completes its options once
// and copies them per in-process syncer; every copy must hand out ports
// from the same allocator, or two bindings' nodes could share a port.
func TestKubeletPortsAreProcessWide(t *testing.T) {
	opts := NewKubeletOptions()
	opts.Address, opts.PortRange = "10.0.0.1", "20000-20001"
	if err := opts.Complete(); err != nil {
		t.Fatal(err)
	}
	first, second := opts, opts // as InProcess copies syncer.Options
	a, err := first.ports.Assign("vnode-a-n1", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := second.ports.Assign("vnode-b-n1", a)
	if err != nil || b == a {
		t.Fatalf("second binding's node got %d (%v), first's %d", b, err, a)
	}
	for _, bad := range []KubeletOptions{
		{Address: "x", PortRange: "20000"},
		{Address: "x", PortRange: "3-1"},
		{Address: "x", PortRange: "1-2", CertFile: "tls.crt"},
	} {
		if err := bad.Complete(); err == nil {
			t.Errorf("%+v: want an error", bad)
		}
	}
	off := NewKubeletOptions()
	if err := off.Complete(); err != nil || off.ports != nil {
		t.Errorf("without an address the kubelet API is off: %v", err)
	}
}

func TestKubeletCertSource(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts KubeletOptions
		want string // "" for an error
	}{
		{name: "default without files", opts: KubeletOptions{Address: "10.0.0.1"}, want: CertSourceSelfSigned},
		{name: "default with files", opts: KubeletOptions{Address: "10.0.0.1", CertFile: "tls.crt", KeyFile: "tls.key"}, want: CertSourceFiles},
		{name: "csr", opts: KubeletOptions{Address: "10.0.0.1", CertSource: CertSourceCSR}, want: CertSourceCSR},
		{name: "csr names a DNS name", opts: KubeletOptions{Address: "syncer.example", CertSource: CertSourceCSR}},
		{name: "csr with files", opts: KubeletOptions{Address: "10.0.0.1", CertSource: CertSourceCSR, CertFile: "tls.crt", KeyFile: "tls.key"}},
		{name: "files without files", opts: KubeletOptions{Address: "10.0.0.1", CertSource: CertSourceFiles}},
		{name: "unknown", opts: KubeletOptions{Address: "10.0.0.1", CertSource: "secret"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.PortRange = "20000-20001"
			err := tt.opts.Complete()
			if tt.want == "" {
				if err == nil {
					t.Errorf("want an error, source %q", tt.opts.CertSource)
				}
				return
			}
			if err != nil || tt.opts.CertSource != tt.want {
				t.Errorf("source %q (%v), want %q", tt.opts.CertSource, err, tt.want)
			}
		})
	}
}

// TestKubeletStreamIdleTimeoutFlag: the kubelet's default, set by the flag
// and handed to the kubelet API; a negative one is refused.
func TestKubeletStreamIdleTimeoutFlag(t *testing.T) {
	opts := NewKubeletOptions()
	if opts.StreamIdleTimeout != 4*time.Hour {
		t.Errorf("default %s, want the kubelet's 4h", opts.StreamIdleTimeout)
	}
	fs := pflag.NewFlagSet("syncer", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse([]string{"--kubelet-streaming-connection-idle-timeout=30m"}); err != nil {
		t.Fatal(err)
	}
	if opts.StreamIdleTimeout != 30*time.Minute {
		t.Errorf("--kubelet-streaming-connection-idle-timeout=30m gives %s", opts.StreamIdleTimeout)
	}
	bad := KubeletOptions{Address: "10.0.0.1", PortRange: "20000-20001", StreamIdleTimeout: -time.Second}
	if err := bad.Complete(); err == nil {
		t.Error("a negative idle timeout: want an error")
	}
}
