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

// Package manifests embeds the shipped manifests, so programs apply exactly
// what `kubectl apply -k` would: the kubeocean command line applies the
// physical cluster's CRD and RBAC from here.
package manifests

import (
	"embed"
	"fmt"
	"path"

	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml rbac/physical/*.yaml
var files embed.FS

// CRDs are the CustomResourceDefinitions, by file name.
const (
	ClusterBindingCRD        = "crds/kubeocean.io_clusterbindings.yaml"
	ResourceLeasingPolicyCRD = "crds/kubeocean.io_resourceleasingpolicies.yaml"
)

// Read returns one embedded file.
func Read(name string) ([]byte, error) { return files.ReadFile(name) }

// Kustomization returns the files that dir's kustomization.yaml lists,
// in its order, e.g. Kustomization("rbac/physical").
func Kustomization(dir string) ([][]byte, error) {
	data, err := files.ReadFile(path.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
	}
	out := make([][]byte, 0, len(k.Resources))
	for _, r := range k.Resources {
		b, err := files.ReadFile(path.Join(dir, r))
		if err != nil {
			return nil, fmt.Errorf("%s lists %s: %w", dir, r, err)
		}
		out = append(out, b)
	}
	return out, nil
}
