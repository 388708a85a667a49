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

package manager

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/syncer"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{"defaults", func(*Options) {}, ""},
		{"in-process needs no templates", func(o *Options) { o.SyncerMode, o.SyncerTemplateDir = ModeInProcess, "" }, ""},
		{"unknown mode", func(o *Options) { o.SyncerMode = "pods" }, `--syncer-mode must be "deployment" or "in-process"`},
		{"deployment without image", func(o *Options) { o.SyncerImage = "" }, "--syncer-image"},
		{"no workers", func(o *Options) { o.Workers = 0 }, "--workers"},
		{"no syncer node workers", func(o *Options) { o.SyncerNodeWorkers = 0 }, "--syncer-node-workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.mutate(&o)
			err := o.Validate()
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestShippedManifestUsesRealFlags decodes manifests/deploy/manager.yaml
// strictly and parses its arguments with the binary's flags.
func TestShippedManifestUsesRealFlags(t *testing.T) {
	data, err := os.ReadFile("../../manifests/deploy/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var deployment appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &deployment); err != nil {
		t.Fatal(err)
	}
	container := deployment.Spec.Template.Spec.Containers[0]

	processOpts, managerOpts := app.NewOptions(Component), NewOptions()
	fs := app.Command{Options: processOpts, AddFlags: managerOpts.AddFlags}.Flags()
	// The pod IP as the kubelet expands it: CSR certificates need an IP.
	args := make([]string, len(container.Args))
	for i, arg := range container.Args {
		args[i] = strings.ReplaceAll(arg, "$(POD_IP)", "10.0.0.1")
	}
	if err := fs.Parse(args); err != nil {
		t.Fatalf("the manifest's arguments do not parse: %v", err)
	}
	if err := managerOpts.Validate(); err != nil {
		t.Fatal(err)
	}
	if !processOpts.Election.Enabled || managerOpts.SyncerMode != ModeDeployment {
		t.Errorf("manifest runs without leader election or not in deployment mode: %+v %+v", processOpts.Election, managerOpts)
	}
	// In-process syncers serve the kubelet API on the pod IP by default.
	if !slices.Contains(container.Args, "--kubelet-address=$(POD_IP)") || !podIPEnv(container) {
		t.Errorf("manifest does not serve the kubelet API on the pod IP: --kubelet-address=%q, env %+v", managerOpts.Kubelet.Address, container.Env)
	}
	if managerOpts.Kubelet.CertSource != syncer.CertSourceCSR || !managerOpts.ApproveKubeletServingCSRs {
		t.Errorf("manifest does not approve CSR serving certificates: source %q, approve %v", managerOpts.Kubelet.CertSource, managerOpts.ApproveKubeletServingCSRs)
	}
	mounted := false
	for _, m := range container.VolumeMounts {
		mounted = mounted || m.MountPath == managerOpts.SyncerTemplateDir
	}
	if !mounted {
		t.Errorf("nothing is mounted at --syncer-template-dir=%s", managerOpts.SyncerTemplateDir)
	}
}

// podIPEnv reports whether the container's POD_IP is its pod's IP from the
// downward API.
func podIPEnv(c corev1.Container) bool {
	for _, env := range c.Env {
		if env.Name == "POD_IP" && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "status.podIP" {
			return true
		}
	}
	return false
}

// The flags the manager passes on to syncer Deployments parse with the
// syncer binary's own flags and mean the same there.
func TestSyncerArgsParseAsSyncerFlags(t *testing.T) {
	opts := NewOptions()
	if err := (app.Command{Options: app.NewOptions(Component), AddFlags: opts.AddFlags}).Flags().Parse([]string{
		"--virtual-apiserver-address=10.0.0.1:443", "--syncer-drain-timeout=90s", "--sync-daemonset-pods",
		"--syncer-max-node-removal-fraction=0.25", "--syncer-outage-lease-renewal-limit=20m",
		"--syncer-event-qps=3", "--syncer-event-qps-per-object=0.5",
	}); err != nil {
		t.Fatal(err)
	}
	syncerOpts := syncer.Options{Kubelet: syncer.NewKubeletOptions()}
	if err := (app.Command{Options: app.NewOptions(syncer.Component), AddFlags: syncerOpts.AddFlags}).Flags().Parse(syncerArgs(opts)); err != nil {
		t.Fatalf("%v: %v", syncerArgs(opts), err)
	}
	if syncerOpts.VirtualAPIServer != "10.0.0.1:443" || syncerOpts.DrainTimeout != 90*time.Second || !syncerOpts.SyncDaemonSetPods ||
		syncerOpts.MaxNodeRemovalFraction != 0.25 || syncerOpts.OutageRenewalLimit != 20*time.Minute ||
		syncerOpts.Events.BindingQPS != 3 || syncerOpts.Events.ObjectQPS != 0.5 {
		t.Fatalf("the syncer got %+v from %v", syncerOpts, syncerArgs(opts))
	}
	if args := syncerArgs(NewOptions()); len(args) != 0 {
		t.Fatalf("defaults pass %v", args)
	}
}
