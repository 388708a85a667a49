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
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestImageFromTable: --image packages <bin-dir>/<image> as the entrypoint
// and the table's companions under /usr/local/bin, as `make images` runs it.
func TestImageFromTable(t *testing.T) {
	body, err := os.ReadFile(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	binDir := t.TempDir()
	for _, c := range commands() {
		if err := os.WriteFile(filepath.Join(binDir, c), body, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "syncer.tar")
	runImage(t, nil, "--image=kubeocean-syncer", "--bin-dir="+binDir,
		"--tag=ghcr.io/kubeocean/kubeocean-syncer:v1", "--output="+out)
	_, idx := openArchive(t, out)
	_, img := singleImage(t, idx)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/kubeocean-syncer"}) {
		t.Errorf("entrypoint %q, want /kubeocean-syncer", cfg.Config.Entrypoint)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers, %v; want base + binaries", len(layers), err)
	}
	names, _ := layerFiles(t, layers[1])
	for _, want := range []string{"kubeocean-syncer", "usr/local/bin/kubeocean-dns"} {
		if !slices.Contains(names, want) {
			t.Errorf("binary layer has %q, want %s", names, want)
		}
	}
}

// TestList: the Makefile builds the commands --list=commands names and
// packs the images --list=images names, so both come from the table.
func TestList(t *testing.T) {
	for what, want := range map[string]string{
		"images":   "kubeocean-manager\nkubeocean-syncer\n",
		"commands": "kubeocean-manager\nkubeocean-syncer\nkubeocean-dns\n",
	} {
		if got := runImage(t, nil, "--list="+what); got != want {
			t.Errorf("--list=%s printed %q, want %q", what, got, want)
		}
	}
}
