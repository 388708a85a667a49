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

package helm

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// objects are parsed manifests by "Kind namespace/name".
type objects map[string]map[string]any

var separator = regexp.MustCompile(`(?m)^---[ \t]*$`)

func parseObjects(t *testing.T, text string) objects {
	t.Helper()
	out := objects{}
	for _, doc := range separator.Split(text, -1) {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("parsing %q: %v", doc, err)
		}
		if len(obj) == 0 {
			continue
		}
		key := keyOf(obj)
		if _, dup := out[key]; dup {
			t.Fatalf("%s twice", key)
		}
		out[key] = obj
	}
	return out
}

func keyOf(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return fmt.Sprint(obj["kind"], " ", name)
}

func (o objects) add(more objects) objects {
	for k, v := range more {
		o[k] = v
	}
	return o
}

func (o objects) without(keys ...string) objects {
	for _, k := range keys {
		delete(o, k)
	}
	return o
}

func (o objects) keys() []string {
	keys := make([]string, 0, len(o))
	for k := range o {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mapStrings rewrites every string value of every object.
func (o objects) mapStrings(f func(string) string) objects {
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		case string:
			return f(v)
		}
		return v
	}
	for _, obj := range o {
		walk(obj)
	}
	return o
}

// diffObjects reports objects missing on either side and objects that
// differ, with both versions.
func diffObjects(t *testing.T, got, want objects) {
	t.Helper()
	for _, k := range want.keys() {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: in the manifests, not rendered by the chart", k)
			continue
		}
		if !reflect.DeepEqual(g, want[k]) {
			gj, _ := json.MarshalIndent(g, "", "  ")
			wj, _ := json.MarshalIndent(want[k], "", "  ")
			t.Errorf("%s differs:\nchart:\n%s\nmanifests:\n%s", k, gj, wj)
		}
	}
	for _, k := range got.keys() {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: rendered by the chart, not in the manifests", k)
		}
	}
}

// subset reports where want is not contained in got: every field of want
// with the same value in got, lists of the same length element by element
// (the apiserver adds defaults, never removes what was sent).
func subset(got, want any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: got %v", path, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, subset(g[k], v, path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
		}
		var out []string
		for i := range w {
			out = append(out, subset(g[i], w[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return []string{fmt.Sprintf("%s: got %v, want %v", path, got, want)}
		}
		return nil
	}
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") }
