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

package syncertemplate

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeocean/kubeocean/internal/app"
	"github.com/kubeocean/kubeocean/internal/syncer"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// shippedTemplates is the template users deploy (manifests/deploy).
const shippedTemplates = "../../../manifests/deploy/syncer-template"

func goldenData() Data {
	return Data{
		BindingName: "worker-1", ClusterID: "w1", MountNamespace: "kubeocean-w1",
		Name: ObjectName("worker-1"), Namespace: "kubeocean-system",
		Image: "ghcr.io/kubeocean/kubeocean-syncer:v0.1.0", ServiceAccountName: "kubeocean-syncer",
		Args:           []string{"--cluster-binding=worker-1", "--leader-elect", "--leader-elect-resource-namespace=kubeocean-system"},
		KubeconfigHash: "5f2b9c0e8d7a6b41",
	}
}

// TestShippedTemplateGolden renders the shipped template and compares the
// decoded objects with testdata/shipped.golden.yaml (go test -update
// rewrites it).
func TestShippedTemplateGolden(t *testing.T) {
	templates, err := Load(shippedTemplates)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := templates.Render(goldenData())
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, obj := range objects {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString("---\n")
		got.Write(data)
	}
	golden := filepath.Join("testdata", "shipped.golden.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("rendering differs from %s (go test -update to accept):\n%s", golden, got.String())
	}
	d := Deployment(objects)
	if d == nil || d.Spec.Template.Spec.Containers[0].Image != goldenData().Image {
		t.Errorf("rendered Deployment does not use the image: %+v", d)
	}
}

func writeTemplates(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const minimalDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Name }}
spec:
  selector:
    matchLabels: {app: syncer}
  template:
    metadata:
      labels: {app: syncer}
    spec:
      containers:
      - name: syncer
        image: {{ quote .Image }}
        args: {{ json .Args }}
`

func TestLoadAndRender(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		wantErr string
		want    []string // kind/namespace/name of the rendered objects
	}{
		{name: "a deployment, namespace defaulted", files: map[string]string{"d.yaml": minimalDeployment},
			want: []string{"Deployment/kubeocean-system/kubeocean-syncer-sample"}},
		{name: "several files and documents, hidden and other files ignored", files: map[string]string{
			"1-sa.yml":     "# leading comment\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa-{{ .BindingName }}\n---\n",
			"2-d.yaml":     minimalDeployment + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{{ .ClusterID }}\n  namespace: kubeocean-system\n",
			".hidden.yaml": "not: [a template",
			"README.md":    "not a template",
		}, want: []string{"ServiceAccount/kubeocean-system/sa-sample", "Deployment/kubeocean-system/kubeocean-syncer-sample", "ConfigMap/kubeocean-system/cm-sample"}},
		{name: "empty folder", files: map[string]string{}, wantErr: "no syncer templates"},
		{name: "template syntax", files: map[string]string{"d.yaml": "name: {{ .Name "}, wantErr: "parsing syncer template"},
		{name: "unknown field", files: map[string]string{"d.yaml": strings.Replace(minimalDeployment, "selector:", "selectr:", 1)},
			wantErr: `unknown field "spec.selectr"`},
		{name: "unknown data", files: map[string]string{"d.yaml": strings.Replace(minimalDeployment, ".Image", ".Imag", 1)},
			wantErr: "Imag"},
		{name: "unsupported kind", files: map[string]string{"d.yaml": minimalDeployment + "---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n"},
			wantErr: "kind Service is not supported"},
		{name: "another namespace", files: map[string]string{"d.yaml": strings.Replace(minimalDeployment, "  name: {{ .Name }}", "  name: {{ .Name }}\n  namespace: default", 1)},
			wantErr: `must be in "kubeocean-system"`},
		{name: "no deployment", files: map[string]string{"d.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"},
			wantErr: "exactly one Deployment, got 0"},
		{name: "two deployments", files: map[string]string{"a.yaml": minimalDeployment, "b.yaml": strings.Replace(minimalDeployment, "{{ .Name }}", "other", 1)},
			wantErr: "exactly one Deployment, got 2"},
		{name: "same object twice", files: map[string]string{"a.yaml": minimalDeployment + "---\n" + minimalDeployment},
			wantErr: "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			templates, err := Load(writeTemplates(t, tt.files))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load = %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			objects, err := templates.Render(sampleData())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objects {
				got = append(got, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetNamespace()+"/"+o.GetName())
			}
			if strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("rendered %v, want %v", got, tt.want)
			}
		})
	}
}

func TestObjectName(t *testing.T) {
	if got := ObjectName("worker-1"); got != "kubeocean-syncer-worker-1" {
		t.Errorf("ObjectName = %q", got)
	}
	long := ObjectName(strings.Repeat("x", 60))
	if len(long) > 63 || !strings.HasPrefix(long, "kubeocean-syncer-") {
		t.Errorf("ObjectName of a long binding = %q (%d characters)", long, len(long))
	}
}

func TestSourceReload(t *testing.T) {
	dir := writeTemplates(t, map[string]string{"d.yaml": minimalDeployment})
	source, err := NewSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	first := source.Current().Hash()

	if changed, err := source.Reload(); changed || err != nil {
		t.Fatalf("Reload of unchanged files = %v, %v", changed, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "d.yaml"), []byte("kind: [broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := source.Reload(); changed || err == nil {
		t.Fatalf("Reload of broken files = %v, %v; want an error", changed, err)
	}
	if source.Current().Hash() != first {
		t.Fatal("broken templates replaced the ones in force")
	}
	edited := strings.Replace(minimalDeployment, "name: syncer", "name: syncer-2", 1)
	if err := os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, err := source.Reload(); !changed || err != nil {
		t.Fatalf("Reload of edited files = %v, %v; want a change", changed, err)
	}
	if source.Current().Hash() == first {
		t.Fatal("hash did not change with the content")
	}
}

// TestShippedTemplateServesKubeletAPI: the shipped syncer serves the
// kubelet API of its virtual nodes on its pod IP, from the downward API.
func TestShippedTemplateServesKubeletAPI(t *testing.T) {
	templates, err := Load(shippedTemplates)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := templates.Render(goldenData())
	if err != nil {
		t.Fatal(err)
	}
	container := Deployment(objects).Spec.Template.Spec.Containers[0]
	// Every argument parses with the syncer binary's own flags.
	opts := syncer.Options{Kubelet: syncer.NewKubeletOptions()}
	fs := app.Command{Options: app.NewOptions(syncer.Component), AddFlags: opts.AddFlags}.Flags()
	if err := fs.Parse(container.Args); err != nil {
		t.Fatal(err)
	}
	kubelet := opts.Kubelet
	if kubelet.Address != "$(POD_IP)" {
		t.Errorf("--kubelet-address=%q, want $(POD_IP)", kubelet.Address)
	}
	if !slices.ContainsFunc(container.Env, func(env corev1.EnvVar) bool {
		return env.Name == "POD_IP" && env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "status.podIP"
	}) {
		t.Errorf("no POD_IP from status.podIP in %+v", container.Env)
	}
	// The manager's arguments come first and whole.
	if !slices.Equal(container.Args[:len(goldenData().Args)], goldenData().Args) {
		t.Errorf("args %q do not start with the manager's %q", container.Args, goldenData().Args)
	}
}
