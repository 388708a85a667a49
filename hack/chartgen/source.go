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
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// objectKey names one object of the manifests.
type objectKey struct{ kind, namespace, name string }

func (k objectKey) String() string {
	if k.namespace == "" {
		return k.kind + " " + k.name
	}
	return k.kind + " " + k.namespace + "/" + k.name
}

// document is one YAML document of a manifest file, its text kept as
// written (comments included) and its identity parsed.
type document struct {
	text string
	key  objectKey
}

var separator = regexp.MustCompile(`(?m)^---[ \t]*$\n?`)

// readDocuments splits a manifest file; documents without an object (only
// comments) are dropped.
func readDocuments(path string) ([]document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var docs []document
	for _, text := range separator.Split(string(data), -1) {
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(text), &obj); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if obj.Kind == "" {
			if strings.TrimSpace(stripComments(text)) != "" {
				return nil, fmt.Errorf("%s: a document without kind", path)
			}
			continue
		}
		docs = append(docs, document{text: text, key: objectKey{obj.Kind, obj.Metadata.Namespace, obj.Metadata.Name}})
	}
	return docs, nil
}

func stripComments(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// kustomization is the part of a kustomization.yaml that the manifests use.
type kustomization struct {
	namespace  string
	resources  []string
	deleted    []objectKey // by `$patch: delete` patches
	configMaps []configMapGenerator
}

type configMapGenerator struct {
	Name  string   `json:"name"`
	Files []string `json:"files"`
}

// readKustomization reads dir/kustomization.yaml and refuses what the
// generator would not carry over, so a new kind of patch fails here
// instead of being dropped from the charts.
func readKustomization(dir string) (kustomization, error) {
	path := filepath.Join(dir, "kustomization.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return kustomization{}, err
	}
	var raw struct {
		APIVersion         string               `json:"apiVersion"`
		Kind               string               `json:"kind"`
		Namespace          string               `json:"namespace"`
		Resources          []string             `json:"resources"`
		ConfigMapGenerator []configMapGenerator `json:"configMapGenerator"`
		GeneratorOptions   struct {
			DisableNameSuffixHash bool `json:"disableNameSuffixHash"`
		} `json:"generatorOptions"`
		Patches []struct {
			Patch string `json:"patch"`
		} `json:"patches"`
	}
	if err := yaml.UnmarshalStrict(data, &raw); err != nil {
		return kustomization{}, fmt.Errorf("%s (chartgen understands resources, namespace, configMapGenerator and $patch: delete patches): %w", path, err)
	}
	k := kustomization{namespace: raw.Namespace, resources: raw.Resources, configMaps: raw.ConfigMapGenerator}
	if len(raw.ConfigMapGenerator) > 0 && !raw.GeneratorOptions.DisableNameSuffixHash {
		return k, fmt.Errorf("%s: chartgen renders generated ConfigMaps without a name hash only", path)
	}
	for _, p := range raw.Patches {
		var patch struct {
			Patch    string `json:"$patch"`
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(p.Patch), &patch); err != nil {
			return k, fmt.Errorf("%s: %w", path, err)
		}
		if patch.Patch != "delete" {
			return k, fmt.Errorf("%s: chartgen understands only $patch: delete patches, not %q", path, p.Patch)
		}
		k.deleted = append(k.deleted, objectKey{patch.Kind, patch.Metadata.Namespace, patch.Metadata.Name})
	}
	return k, nil
}
