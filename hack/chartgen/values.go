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

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// defaults holds, by value path (manager.resources), what the manifests
// say where the charts put a value: values.yaml must default to the same,
// so that a chart with its defaults renders the manifests.
var defaults = map[string]any{}

func expectDefault(path string, value any) { defaults[path] = value }

// checkDefaults compares values.yaml of chart (under charts) with the
// recorded defaults of the paths beginning with one of prefixes.
func checkDefaults(charts, chart string, paths []string) error {
	data, err := os.ReadFile(filepath.Join(charts, chart, "values.yaml"))
	if err != nil {
		return err
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		return fmt.Errorf("%s/values.yaml: %w", chart, err)
	}
	sort.Strings(paths)
	var errs []string
	for _, path := range paths {
		want, ok := defaults[path]
		if !ok {
			return fmt.Errorf("no manifest sets %s", path)
		}
		got := lookup(values, strings.Split(path, "."))
		// Compare through JSON, the form both have after parsing.
		wantJSON, _ := yaml.Marshal(want)
		gotJSON, _ := yaml.Marshal(got)
		if !reflect.DeepEqual(wantJSON, gotJSON) {
			errs = append(errs, fmt.Sprintf("%s/values.yaml: %s is\n%s\nthe manifests say\n%s", chart, path, gotJSON, wantJSON))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the defaults must render the plain manifests; edit values.yaml:\n%s", strings.Join(errs, "\n"))
	}
	return nil
}

func lookup(m map[string]any, path []string) any {
	v, ok := m[path[0]]
	if !ok || len(path) == 1 {
		return v
	}
	next, _ := v.(map[string]any)
	if next == nil {
		return nil
	}
	return lookup(next, path[1:])
}
