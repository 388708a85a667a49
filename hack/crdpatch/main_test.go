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
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

var crdFiles = []string{
	"../../manifests/crds/kubeocean.io_clusterbindings.yaml",
	"../../manifests/crds/kubeocean.io_resourceleasingpolicies.yaml",
}

// The checked-in CRDs are already patched, and patching is deterministic
// and idempotent: hack/verify-crds.sh depends on both.
func TestPatchIsIdempotent(t *testing.T) {
	for _, path := range crdFiles {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := patchCRD(in)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Equal(in, out) {
			t.Errorf("%s: patching the checked-in CRD changes it; run hack/update-crds.sh", filepath.Base(path))
		}
	}
}

func TestPatchAddsRulesToTheNodeSelector(t *testing.T) {
	in, err := os.ReadFile(crdFiles[0])
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		t.Fatal(err)
	}
	version := dig(crd, "spec", "versions").([]any)[0]
	terms := dig(version, "schema", "openAPIV3Schema", "properties", "spec", "properties", "nodeSelector", "properties", "nodeSelectorTerms")
	if got := dig(terms, "maxItems"); got != float64(maxTerms) {
		t.Errorf("nodeSelectorTerms maxItems = %v, want %d", got, maxTerms)
	}
	expr := dig(terms, "items", "properties", "matchExpressions", "items")
	if rules, _ := dig(expr, "x-kubernetes-validations").([]any); len(rules) != 3 {
		t.Errorf("matchExpressions items have %d rules, want 3", len(rules))
	}
	if got := dig(expr, "properties", "values", "items", "pattern"); got != labelValueRegex {
		t.Errorf("values pattern = %v", got)
	}
	fields := dig(terms, "items", "properties", "matchFields", "items")
	if rules, _ := dig(fields, "properties", "key", "x-kubernetes-validations").([]any); len(rules) != 1 {
		t.Errorf("matchFields key has %d rules, want 1", len(rules))
	}
}

// A schema that changed shape is reported, not silently left unpatched.
func TestPatchFailsOnAnUnexpectedSchema(t *testing.T) {
	crd := []byte(`---
spec:
  versions:
  - schema:
      openAPIV3Schema:
        properties:
          spec:
            properties:
              nodeSelector:
                properties:
                  nodeSelectorTerms:
                    items:
                      properties:
                        matchExpressions: {}
`)
	if _, err := patchCRD(crd); err == nil || !strings.Contains(err.Error(), "spec.nodeSelector") {
		t.Fatalf("patchCRD of a changed schema: err = %v", err)
	}
}

// Every field of both kinds says what it is, in kubectl explain too.
func TestEveryFieldIsDescribed(t *testing.T) {
	for _, path := range crdFiles {
		in, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(in, &crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range dig(crd, "spec", "versions").([]any) {
			root := dig(v, "schema", "openAPIV3Schema").(map[string]any)
			walkProperties(root, "", func(field string, schema map[string]any) {
				if field == ".metadata" {
					return // the apiserver's own
				}
				if d, _ := schema["description"].(string); strings.TrimSpace(d) == "" {
					t.Errorf("%s: %s has no description", filepath.Base(path), field)
				}
			})
		}
	}
}

func walkProperties(schema map[string]any, path string, visit func(string, map[string]any)) {
	props, _ := schema["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		child := props[name].(map[string]any)
		visit(path+"."+name, child)
		walkProperties(child, path+"."+name, visit)
		if items, ok := child["items"].(map[string]any); ok {
			walkProperties(items, path+"."+name+"[]", visit)
		}
	}
}

// The regular expressions agree with the apimachinery functions that
// internal/validation uses, on the edges of what each accepts.
func TestRegexesAgreeWithGoValidation(t *testing.T) {
	qualified := regexp.MustCompile(qualifiedNameRegex)
	prefixLength := regexp.MustCompile(`^[^/]{1,253}/`)
	for _, key := range []string{
		"pool", "example.com/pool", "kubernetes.io/hostname", "a", "A_b.c-D", strings.Repeat("k", 63), strings.Repeat("k", 64),
		"example.com/" + strings.Repeat("k", 63), "example.com/" + strings.Repeat("k", 64), strings.Repeat("a.", 126) + "a/k",
		strings.Repeat("a.", 127) + "com/k", "a/b/c", "/k", "k/", "Example.com/k", "-k", "k-", "gpu pool", "", "_k", "k_",
		"a..b/k", "a-.b/k", "1.2.3/k",
	} {
		cel := qualified.MatchString(key) && (!strings.Contains(key, "/") || prefixLength.MatchString(key))
		goOK := len(validation.IsQualifiedName(key)) == 0
		if cel != goOK {
			t.Errorf("key %q: CRD rule accepts = %v, Go accepts = %v", key, cel, goOK)
		}
	}
	label := regexp.MustCompile(labelValueRegex)
	for _, v := range []string{"", "idle", "gpu pool", "-idle", "idle-", "a.b_c-d", "0", strings.Repeat("v", 63), "Ü", "a/b"} {
		cel := label.MatchString(v) && len(v) <= maxLabelValueLength
		if goOK := len(validation.IsValidLabelValue(v)) == 0; cel != goOK {
			t.Errorf("value %q: CRD pattern accepts = %v, Go accepts = %v", v, cel, goOK)
		}
	}
	short, long := regexp.MustCompile(shortIntegerRegex), regexp.MustCompile(longIntegerRegex)
	for _, v := range []string{"0", "7", "0008", "999999999999999999", "9223372036854775807", "9223372036854775808",
		"9999999999999999999", "10000000000000000000", "-1", "+1", "1.5", "1e3", "", "12a"} {
		cel := short.MatchString(v) || (long.MatchString(v) && v <= maxInt64)
		_, err := strconv.ParseInt(v, 10, 64)
		goOK := err == nil && len(validation.IsValidLabelValue(v)) == 0
		if cel != goOK {
			t.Errorf("Gt/Lt value %q: CRD rule accepts = %v, Go accepts = %v", v, cel, goOK)
		}
	}
}

// The timeZone rule must not refuse any zone the Go side knows: every name
// in Go's own time zone database matches it.
func TestTimeZoneRuleAcceptsEveryKnownZone(t *testing.T) {
	in, err := os.ReadFile(crdFiles[1])
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`self\.matches\('(\^\[A-Za-z\][^']*)'\)`).FindSubmatch(in)
	if m == nil {
		t.Fatal("no timeZone rule in the ResourceLeasingPolicy CRD")
	}
	zone := regexp.MustCompile(string(m[1]))
	zones, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Skipf("no zoneinfo.zip in GOROOT: %v", err)
	}
	defer zones.Close()
	if len(zones.File) < 300 {
		t.Fatalf("only %d zones in zoneinfo.zip", len(zones.File))
	}
	for _, f := range zones.File {
		if !zone.MatchString(f.Name) {
			t.Errorf("time zone %q is refused by the CRD rule %s", f.Name, zone)
		}
	}
	for _, bad := range []string{"Europe/Berlin ", "+02:00", "../etc/passwd", "/etc/localtime", "Europe/", "Europe//Berlin", "UTC+2:00"} {
		if zone.MatchString(bad) {
			t.Errorf("time zone %q is accepted by the CRD rule", bad)
		}
	}
}
