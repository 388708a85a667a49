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

// Command crdpatch adds to the CRDs that controller-gen writes the validation
// it cannot generate: rules on spec.nodeSelector, a core/v1 NodeSelector,
// whose type we do not own and so cannot mark. hack/update-crds.sh runs it
// on every CRD after controller-gen:
//
//	go run ./hack/crdpatch manifests/crds/*.yaml
//
// The rules refuse at admission what internal/validation.NodeSelector refuses
// (what the syncer cannot evaluate), and the limits they come with (at most
// maxTerms terms of maxRequirements requirements of maxValues values) keep
// the apiserver's estimate of their cost within its budget: without
// maxItems and maxLength a rule nested in these lists is refused as too
// costly. The output is a pure function of the input, so
// hack/verify-crds.sh stays clean.
package main

import (
	"bytes"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Limits of a node selector: generous for real selectors (which have a few
// terms of a few requirements), small enough for the CEL cost budget of a
// CRD. The budget is what shapes the rules: the apiserver multiplies each
// rule's cost by the most times it can run, here terms × requirements
// (1,024) for a rule on a requirement, and × values (262,144) for a rule on
// a value. A CEL rule on each value would exceed the budget many times
// over at any useful limits, so values are checked by an OpenAPI pattern,
// which costs nothing; keys, checked once per requirement, get a CEL rule
// with a clear message.
const (
	maxTerms        = 32
	maxRequirements = 32
	maxValues       = 256
	// A qualified name: a DNS subdomain (253) prefix, '/', a name (63).
	maxKeyLength = 253 + 1 + 63
	// Label values, and so the values of label requirements.
	maxLabelValueLength = 63
	// Node names, the values of field requirements.
	maxNodeNameLength = 253
)

// Regular expressions (RE2, as CEL's matches) of the apimachinery
// validation functions the Go side uses.
const (
	// IsQualifiedName: an optional DNS-subdomain prefix and '/', then a
	// name of at most 63 characters.
	qualifiedNameRegex = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$`
	// IsValidLabelValue (its length is checked by maxLength).
	labelValueRegex = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// strconv.ParseInt(v, 10, 64) of a label value: decimal digits without
	// a sign (a label value cannot start with one) that fit in an int64.
	// Up to 18 significant digits always fit; 19 digits are compared as
	// strings with the largest int64.
	shortIntegerRegex = `^0*[0-9]{1,18}$`
	longIntegerRegex  = `^[0-9]{19}$`
	maxInt64          = "9223372036854775807"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: crdpatch CRD.yaml...")
		os.Exit(2)
	}
	for _, path := range os.Args[1:] {
		if err := patchFile(path); err != nil {
			fmt.Fprintf(os.Stderr, "crdpatch: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func patchFile(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := patchCRD(in)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// yamlHeader starts every file controller-gen writes.
const yamlHeader = "---\n"

// patchCRD returns the CRD in with the node-selector rules added to every
// version that has a spec.nodeSelector, in controller-gen's YAML layout.
func patchCRD(in []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(bytes.TrimPrefix(in, []byte(yamlHeader)), &crd); err != nil {
		return nil, err
	}
	versions, _ := dig(crd, "spec", "versions").([]any)
	for i, v := range versions {
		version, _ := v.(map[string]any)
		selector, ok := dig(version, "schema", "openAPIV3Schema", "properties", "spec", "properties", "nodeSelector").(map[string]any)
		if !ok {
			continue
		}
		if err := patchNodeSelector(selector); err != nil {
			return nil, fmt.Errorf("versions[%d]: spec.nodeSelector: %w", i, err)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte(yamlHeader), out...), nil
}

// dig walks nested maps along keys; nil when a step is missing.
func dig(node any, keys ...string) any {
	for _, key := range keys {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[key]
	}
	return node
}

// schemaAt returns the schema object at keys below node, or an error naming
// the first step that is missing: the generated schema of a core type
// changed shape, and the rules must be revisited.
func schemaAt(node map[string]any, keys ...string) (map[string]any, error) {
	for i, key := range keys {
		next, ok := node[key].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("no %v in the generated schema", keys[:i+1])
		}
		node = next
	}
	return node, nil
}

type rule struct {
	rule, message, fieldPath string
}

func (r rule) schema() map[string]any {
	m := map[string]any{"rule": r.rule, "message": r.message}
	if r.fieldPath != "" {
		m["fieldPath"] = r.fieldPath
	}
	return m
}

func setRules(schema map[string]any, rules ...rule) {
	list := make([]any, 0, len(rules))
	for _, r := range rules {
		list = append(list, r.schema())
	}
	schema["x-kubernetes-validations"] = list
}

func enum(values ...string) []any {
	list := make([]any, 0, len(values))
	for _, v := range values {
		list = append(list, v)
	}
	return list
}

// patchNodeSelector adds limits and rules to the schema of a
// core/v1 NodeSelector.
func patchNodeSelector(selector map[string]any) error {
	terms, err := schemaAt(selector, "properties", "nodeSelectorTerms")
	if err != nil {
		return err
	}
	terms["maxItems"] = int64(maxTerms)
	term, err := schemaAt(terms, "items")
	if err != nil {
		return err
	}
	for name, patch := range map[string]func(map[string]any) error{
		"matchExpressions": patchLabelRequirement,
		"matchFields":      patchFieldRequirement,
	} {
		list, err := schemaAt(term, "properties", name)
		if err != nil {
			return err
		}
		list["maxItems"] = int64(maxRequirements)
		requirement, err := schemaAt(list, "items")
		if err != nil {
			return err
		}
		if err := patch(requirement); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if name == "matchFields" {
			list["description"] = "A list of node selector requirements by node's fields. " +
				"The only field a node can be selected by is metadata.name, with the operator In or NotIn and exactly one value, a node name."
		}
	}
	return nil
}

// requirementParts returns the key, operator and values schemas of a
// NodeSelectorRequirement.
func requirementParts(requirement map[string]any) (key, operator, values, value map[string]any, err error) {
	if key, err = schemaAt(requirement, "properties", "key"); err != nil {
		return
	}
	if operator, err = schemaAt(requirement, "properties", "operator"); err != nil {
		return
	}
	if values, err = schemaAt(requirement, "properties", "values"); err != nil {
		return
	}
	value, err = schemaAt(values, "items")
	return
}

// patchLabelRequirement: what labels.Requirement and
// internal/validation.NodeSelector accept for a requirement on node labels.
func patchLabelRequirement(requirement map[string]any) error {
	key, operator, values, value, err := requirementParts(requirement)
	if err != nil {
		return err
	}
	key["maxLength"] = int64(maxKeyLength)
	setRules(key, rule{
		rule: fmt.Sprintf("self.matches('%s') && (!self.contains('/') || self.matches('^[^/]{1,253}/'))", celString(qualifiedNameRegex)),
		message: "key must be a label key: an optional DNS subdomain prefix (at most 253 characters) and '/', then a name of at most 63 " +
			"letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
	})
	operator["enum"] = enum("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
	values["maxItems"] = int64(maxValues)
	value["maxLength"] = int64(maxLabelValueLength)
	value["pattern"] = labelValueRegex
	value["description"] = "A label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit (no spaces)."
	setRules(requirement,
		rule{
			rule:      "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
			message:   "operators In and NotIn need at least one value",
			fieldPath: ".values",
		},
		rule{
			rule:      "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
			message:   "operators Exists and DoesNotExist take no values",
			fieldPath: ".values",
		},
		rule{
			rule: fmt.Sprintf("!(self.operator in ['Gt', 'Lt']) || (has(self.values) && size(self.values) == 1 && "+
				"(self.values[0].matches('%s') || (self.values[0].matches('%s') && self.values[0] <= '%s')))",
				celString(shortIntegerRegex), celString(longIntegerRegex), maxInt64),
			message:   "operators Gt and Lt need exactly one value, a decimal integer (at most " + maxInt64 + ")",
			fieldPath: ".values",
		},
	)
	return nil
}

// patchFieldRequirement: a node selector can match one field only,
// metadata.name, with In or NotIn and one node name; any other would
// silently select nothing.
func patchFieldRequirement(requirement map[string]any) error {
	key, operator, values, value, err := requirementParts(requirement)
	if err != nil {
		return err
	}
	key["maxLength"] = int64(maxKeyLength)
	setRules(key, rule{
		rule:    "self == 'metadata.name'",
		message: "matchFields can only match the field metadata.name",
	})
	operator["enum"] = enum("In", "NotIn")
	values["maxItems"] = int64(maxValues)
	value["maxLength"] = int64(maxNodeNameLength)
	setRules(requirement, rule{
		rule:      "has(self.values) && size(self.values) == 1",
		message:   "matchFields need exactly one value, a node name",
		fieldPath: ".values",
	})
	return nil
}

// celString escapes s for a single-quoted CEL string literal.
func celString(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '\\', '\'':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
