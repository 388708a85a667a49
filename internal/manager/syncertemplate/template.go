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
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	kubeoceanv1alpha1 "github.com/kubeocean/kubeocean/apis/kubeocean/v1alpha1"
)

// Data is what a template can use.
type Data struct {
	// BindingName, ClusterID and MountNamespace come from the binding.
	BindingName    string
	ClusterID      string
	MountNamespace string
	// Name is the name the manager suggests for the syncer's objects:
	// kubeocean-syncer-<binding>, shortened with a hash to 63 characters.
	Name string
	// Namespace is where the syncer's objects live (--syncer-namespace).
	Namespace string
	// Image is the syncer image (--syncer-image).
	Image string
	// ServiceAccountName is the account the syncer runs as.
	ServiceAccountName string
	// Args are the syncer's command-line arguments the manager requires.
	Args []string
	// KubeconfigHash changes with the kubeconfig; put it on the pod template
	// so that a changed Secret restarts the syncer.
	KubeconfigHash string
}

// ObjectName is the suggested name of a binding's syncer objects.
func ObjectName(binding string) string {
	name := "kubeocean-syncer-" + binding
	if len(name) <= 63 {
		return name
	}
	return kubeoceanv1alpha1.PhysicalName("", name)
}

// Templates are the parsed templates of one folder.
type Templates struct {
	dir   string
	files []*template.Template
	hash  string
}

// funcs are the helpers templates may use beyond text/template's own.
var funcs = template.FuncMap{
	// quote renders a string as a double-quoted YAML (JSON) scalar.
	"quote": func(s string) (string, error) { return toJSON(s) },
	// json renders any value as JSON, which is valid YAML flow style:
	// args: {{ json .Args }}
	"json": toJSON,
}

func toJSON(v any) (string, error) {
	data, err := json.Marshal(v)
	return string(data), err
}

// Load parses the templates of dir. It fails when the folder has none, when
// one does not parse, or when rendering them for a sample binding does not
// give valid syncer objects.
func Load(dir string) (*Templates, error) {
	contents, err := readDir(dir)
	if err != nil {
		return nil, err
	}
	return parse(dir, contents)
}

// readDir returns the template files of dir by name.
func readDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading syncer templates: %w", err)
	}
	contents := map[string][]byte{}
	for _, e := range entries {
		// Mounted ConfigMaps hold their files behind "..data" symlinks;
		// hidden entries are the mechanism, not templates.
		name := e.Name()
		if strings.HasPrefix(name, ".") || (filepath.Ext(name) != ".yaml" && filepath.Ext(name) != ".yml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading syncer template: %w", err)
		}
		contents[name] = data
	}
	if len(contents) == 0 {
		return nil, fmt.Errorf("no syncer templates (*.yaml, *.yml) in %s", dir)
	}
	return contents, nil
}

func parse(dir string, contents map[string][]byte) (*Templates, error) {
	names := make([]string, 0, len(contents))
	for name := range contents {
		names = append(names, name)
	}
	slices.Sort(names)
	sum := sha256.New()
	t := &Templates{dir: dir}
	for _, name := range names {
		fmt.Fprintf(sum, "%s\x00%d\x00", name, len(contents[name]))
		sum.Write(contents[name])
		parsed, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(contents[name]))
		if err != nil {
			return nil, fmt.Errorf("parsing syncer template: %w", err)
		}
		t.files = append(t.files, parsed)
	}
	t.hash = hex.EncodeToString(sum.Sum(nil))
	if _, err := t.Render(sampleData()); err != nil {
		return nil, fmt.Errorf("syncer templates in %s do not render for a sample binding: %w", dir, err)
	}
	return t, nil
}

// sampleData is a binding that any correct template must render for.
func sampleData() Data {
	return Data{
		BindingName: "sample", ClusterID: "sample", MountNamespace: "sample", Name: ObjectName("sample"),
		Namespace: "kubeocean-system", Image: "kubeocean-syncer:sample", ServiceAccountName: "kubeocean-syncer",
		Args: []string{"--cluster-binding=sample"}, KubeconfigHash: "0123456789abcdef",
	}
}

// Hash identifies the templates' content.
func (t *Templates) Hash() string { return t.hash }

// Dir is the folder the templates were read from.
func (t *Templates) Dir() string { return t.dir }

// Render executes every template with data and decodes the documents.
func (t *Templates) Render(data Data) ([]Object, error) {
	var objects []Object
	for _, file := range t.files {
		var out bytes.Buffer
		if err := file.Execute(&out, data); err != nil {
			return nil, fmt.Errorf("rendering syncer template: %w", err)
		}
		decoded, err := decode(file.Name(), out.Bytes(), data.Namespace)
		if err != nil {
			return nil, err
		}
		objects = append(objects, decoded...)
	}
	if err := checkObjects(objects); err != nil {
		return nil, err
	}
	return objects, nil
}
