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
	"path/filepath"
	"slices"
)

// imageSpec is what one of Kubeocean's images holds. The table below is the
// one definition: `make images` builds from it (--image), and the
// Dockerfile's targets must agree with it (dockerfile_test.go), so the two
// ways of building an image cannot drift apart.
type imageSpec struct {
	// name is the image's repository name, its entrypoint /<name> and the
	// command ./cmd/<name> it is built from.
	name string
	// companions are more commands from ./cmd/, installed at
	// /usr/local/bin/<name> because the entrypoint's Deployments run them
	// by name from PATH.
	companions []string
}

var images = []imageSpec{
	{name: "kubeocean-manager"},
	// kubeocean-dns is the binding's DNS server, run from the syncer's image.
	{name: "kubeocean-syncer", companions: []string{"kubeocean-dns"}},
}

func lookupImage(name string) (imageSpec, error) {
	i := slices.IndexFunc(images, func(s imageSpec) bool { return s.name == name })
	if i < 0 {
		return imageSpec{}, fmt.Errorf("--image %q: want one of %q", name, imageNames())
	}
	return images[i], nil
}

func imageNames() []string {
	var names []string
	for _, s := range images {
		names = append(names, s.name)
	}
	return names
}

// commands lists every ./cmd/ command some image holds, each once, in the
// order `go build` should get them.
func commands() []string {
	var out []string
	for _, s := range images {
		for _, c := range append([]string{s.name}, s.companions...) {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// fromBinDir points the options at the image's binaries, built into binDir
// under their command names (`go build -o binDir/ ./cmd/...`).
func (s imageSpec) fromBinDir(opts *options, binDir string) {
	opts.binary = filepath.Join(binDir, s.name)
	opts.name = s.name
	opts.extras = nil
	for _, c := range s.companions {
		opts.extras = append(opts.extras, filepath.Join(binDir, c))
	}
}
