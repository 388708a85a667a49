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
	"archive/tar"
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// defaultPath matches distroless; the image has no shell, but PATH is still
// what exec.LookPath in the binary (or `kubectl debug` tooling) consults.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type result struct {
	digest v1.Hash
	size   int64
	layers int
}

func build(opts *options) (*result, error) {
	for _, b := range append([]string{opts.binary}, opts.extras...) {
		if err := checkStaticELF(b, opts.platform); err != nil {
			return nil, err
		}
	}
	img, err := assemble(opts)
	if err != nil {
		return nil, err
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	size, err := writeArchive(img, opts)
	if err != nil {
		return nil, err
	}
	return &result{digest: digest, size: size, layers: len(layers)}, nil
}

// assemble builds the image in two layers: base files that never change
// between releases (so registries and nodes share them across both
// binaries), and the binary itself.
func assemble(opts *options) (v1.Image, error) {
	bin, err := os.ReadFile(opts.binary)
	if err != nil {
		return nil, err
	}
	ca, err := readCABundle(opts.caCerts)
	if err != nil {
		return nil, err
	}
	base, err := newLayer(baseEntries(ca), opts.created)
	if err != nil {
		return nil, fmt.Errorf("base layer: %w", err)
	}
	entries := []fileEntry{{path: opts.name, mode: 0o755, body: bin}}
	if len(opts.extras) > 0 {
		entries = append(entries, fileEntry{path: "usr/", mode: 0o755}, fileEntry{path: "usr/local/", mode: 0o755}, fileEntry{path: "usr/local/bin/", mode: 0o755})
	}
	for _, extra := range opts.extras {
		body, err := os.ReadFile(extra)
		if err != nil {
			return nil, err
		}
		entries = append(entries, fileEntry{path: "usr/local/bin/" + filepath.Base(extra), mode: 0o755, body: body})
	}
	app, err := newLayer(entries, opts.created)
	if err != nil {
		return nil, fmt.Errorf("binary layer: %w", err)
	}

	// empty.Image carries Docker media types; registries and runtimes treat
	// mixed Docker/OCI manifests inconsistently, so everything is OCI.
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.ConfigFile(img, imageConfig(opts)); err != nil {
		return nil, err
	}
	created := v1.Time{Time: opts.created}
	return mutate.Append(img,
		mutate.Addendum{
			Layer:     base,
			MediaType: types.OCILayer,
			History:   v1.History{Created: created, CreatedBy: "hack/image: base files (passwd, group, nsswitch, tmp)"},
		},
		mutate.Addendum{
			Layer:     app,
			MediaType: types.OCILayer,
			History:   v1.History{Created: created, CreatedBy: "hack/image: COPY " + opts.name + " /" + opts.name},
		},
	)
}

func imageConfig(opts *options) *v1.ConfigFile {
	return &v1.ConfigFile{
		Created:      v1.Time{Time: opts.created},
		OS:           opts.platform.OS,
		Architecture: opts.platform.Architecture,
		Variant:      opts.platform.Variant,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{"/" + opts.name},
			User:       nonrootUser,
			WorkingDir: "/",
			Env:        []string{defaultPath},
			Labels: map[string]string{
				"org.opencontainers.image.title":   opts.name,
				"org.opencontainers.image.source":  opts.source,
				"org.opencontainers.image.version": opts.tag.TagStr(),
			},
		},
	}
}

// writeArchive lets ggcr write a proper OCI image layout, then tars it. The
// reference goes into both annotations podman (ref.name) and containerd
// (io.containerd.image.name) read to name the image on load.
func writeArchive(img v1.Image, opts *options) (int64, error) {
	dir, err := os.MkdirTemp("", "kubeocean-image-")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.RemoveAll(dir) }()

	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return 0, err
	}
	if err := lp.WriteImage(img); err != nil {
		return 0, fmt.Errorf("writing OCI layout: %w", err)
	}
	desc, err := indexDescriptor(img, opts)
	if err != nil {
		return 0, err
	}
	if err := lp.AppendDescriptor(desc); err != nil {
		return 0, fmt.Errorf("writing OCI layout: %w", err)
	}
	return tarDir(dir, opts.output, opts.created)
}

// indexDescriptor is spelled out instead of using layout.AppendImage, which
// would also set artifactType (meant for OCI artifacts and referrers) on a
// plain image.
func indexDescriptor(img v1.Image, opts *options) (v1.Descriptor, error) {
	digest, err := img.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := img.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	ref := opts.tag.Name()
	platform := opts.platform
	return v1.Descriptor{
		MediaType: types.OCIManifestSchema1,
		Size:      size,
		Digest:    digest,
		Platform:  &platform,
		Annotations: map[string]string{
			"org.opencontainers.image.ref.name": ref,
			"io.containerd.image.name":          ref,
		},
	}, nil
}

// tarDir archives dir into output atomically (temp file + rename, so a
// failed run never leaves a truncated archive behind for `make` to trust).
// Modes, owners and times are normalised so the archive bytes, not only the
// image digest, are reproducible.
func tarDir(dir, output string, mtime time.Time) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(output), ".image-*.tar")
	if err != nil {
		return 0, err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	defer func() { _ = tmp.Close() }()

	bw := bufio.NewWriterSize(tmp, 1<<20)
	tw := tar.NewWriter(bw)
	// WalkDir visits in lexical order, which fixes the entry order.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		return addToTar(tw, path, filepath.ToSlash(rel), d.IsDir(), mtime)
	})
	if err != nil {
		return 0, err
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), output); err != nil {
		return 0, err
	}
	fi, err := os.Stat(output)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func addToTar(tw *tar.Writer, path, name string, isDir bool, mtime time.Time) error {
	if isDir {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, ModTime: mtime})
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: fi.Size(), ModTime: mtime}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}
