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
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestExtraBinaries: --extra-binary puts a companion binary at
// /usr/local/bin/<name> in the binary layer, where PATH finds it (the
// syncer's image ships kubeocean-dns so).
func TestExtraBinaries(t *testing.T) {
	bin := staticBinary(t)
	extra := filepath.Join(t.TempDir(), "kubeocean-dns")
	body, err := os.ReadFile(staticBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(extra, body, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x.tar")
	runImage(t, nil, "--binary="+bin, "--extra-binary="+extra, "--tag="+testTag, "--output="+out)
	_, idx := openArchive(t, out)
	_, img := singleImage(t, idx)
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%d layers, %v; want base + binaries", len(layers), err)
	}
	names, files := layerFiles(t, layers[1])
	for _, want := range []string{"kubeocean-test", "usr/local/bin/kubeocean-dns"} {
		if !slices.Contains(names, want) {
			t.Errorf("binary layer has %q, want %s", names, want)
		}
	}
	f := files["usr/local/bin/kubeocean-dns"]
	if f.mode != 0o755 || !bytes.Equal(f.body, body) {
		t.Errorf("kubeocean-dns in the image: mode %v, %d bytes; want 0755 and the file's %d bytes", f.mode, len(f.body), len(body))
	}
}
