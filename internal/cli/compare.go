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

package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// differences lists where the object in the cluster departs from what bind
// would apply, looking only at the fields bind sets: keys the API server
// defaulted or an administrator added to a map (labels, annotations, a
// defaulted field) are not differences, since bind never sets them; a list
// (rules, subjects) differs when an item bind would set is missing or when
// the cluster's list has items bind would not set, whatever their order.
func differences(shipped, cluster map[string]any) []string {
	var out []string
	compareValue("", shipped, cluster, &out)
	return out
}

// same says whether the cluster's value holds everything shipped sets.
func same(shipped, cluster any) bool {
	var out []string
	compareValue("", shipped, cluster, &out)
	return len(out) == 0
}

func compareValue(path string, shipped, cluster any, out *[]string) {
	switch s := shipped.(type) {
	case nil:
		// No opinion (YAML null).
	case map[string]any:
		c, ok := cluster.(map[string]any)
		if !ok && cluster == nil {
			// Absent: each field shipped sets is missing.
			c, ok = map[string]any{}, true
		}
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: shipped %s, here %s", orRoot(path), brief(s), brief(cluster)))
			return
		}
		for _, k := range sortedKeys(s) {
			compareValue(joinPath(path, k), s[k], c[k], out)
		}
	case []any:
		c, ok := cluster.([]any)
		if !ok && cluster != nil {
			*out = append(*out, fmt.Sprintf("%s: shipped %s, here %s", orRoot(path), brief(s), brief(cluster)))
			return
		}
		compareList(path, s, c, out)
	default:
		if cluster == nil {
			*out = append(*out, fmt.Sprintf("%s: shipped %s, absent here", orRoot(path), brief(s)))
		} else if asJSON(s) != asJSON(cluster) && !canonicalQuantity(path, s, cluster) {
			*out = append(*out, fmt.Sprintf("%s: shipped %s, here %s", orRoot(path), brief(s), brief(cluster)))
		}
	}
}

// compareList matches each shipped item with a cluster item that holds it;
// what is left on either side differs.
func compareList(path string, shipped, cluster []any, out *[]string) {
	used := make([]bool, len(cluster))
	for _, s := range shipped {
		found := false
		for j, c := range cluster {
			if !used[j] && same(s, c) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			*out = append(*out, fmt.Sprintf("%s: shipped item %s missing here", orRoot(path), brief(s)))
		}
	}
	extra := 0
	for _, u := range used {
		if !u {
			extra++
		}
	}
	if extra > 0 {
		*out = append(*out, fmt.Sprintf("%s: %d item(s) here that are not shipped", orRoot(path), extra))
	}
}

// project keeps of the cluster's object the fields bind sets, so that a
// diff against the shipped object shows only what bind manages; list items
// beyond the shipped ones are kept whole.
func project(shipped, cluster any) any {
	switch s := shipped.(type) {
	case map[string]any:
		c, ok := cluster.(map[string]any)
		if !ok {
			return cluster
		}
		out := map[string]any{}
		for k, sv := range s {
			if cv, ok := c[k]; ok {
				out[k] = project(sv, cv)
			}
		}
		return out
	case []any:
		c, ok := cluster.([]any)
		if !ok {
			return cluster
		}
		out := make([]any, len(c))
		for i := range c {
			if i < len(s) {
				out[i] = project(s[i], c[i])
			} else {
				out[i] = c[i]
			}
		}
		return out
	}
	return cluster
}

// redacted returns obj, or for a Secret a copy whose values are replaced.
func redacted(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj == nil || obj.GetKind() != "Secret" {
		return obj
	}
	obj = obj.DeepCopy()
	for _, field := range []string{"data", "stringData"} {
		values, _, _ := unstructured.NestedMap(obj.Object, field)
		for k := range values {
			values[k] = "<redacted>"
		}
		if len(values) > 0 {
			_ = unstructured.SetNestedMap(obj.Object, values, field)
		}
	}
	return obj
}

// canonicalQuantity says whether the cluster holds the canonical form of a
// quantity shipped in another ("10000" is stored as "10k"). Labels and
// annotations are strings whatever they look like.
func canonicalQuantity(path string, shipped, cluster any) bool {
	s, ok1 := shipped.(string)
	c, ok2 := cluster.(string)
	if !ok1 || !ok2 || strings.HasPrefix(path, "metadata") {
		return false
	}
	q, err := resource.ParseQuantity(s)
	return err == nil && q.String() == c
}

// asJSON is a scalar as JSON: numbers decoded from YAML and from the API
// server compare equal this way whatever their Go type.
func asJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}

// brief is a value as JSON, cut short, for a summary.
func brief(v any) string {
	if v == nil {
		return "nothing"
	}
	const limit = 160
	s := asJSON(v)
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}

func joinPath(path, key string) string {
	if strings.ContainsAny(key, "./:") {
		return fmt.Sprintf("%s[%q]", path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(object)"
	}
	return path
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
