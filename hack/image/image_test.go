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
	"bytes"
	"crypto/sha256"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

const testTag = "ghcr.io/kubeocean/kubeocean-test:v1.2.3"

// staticBinary compiles a tiny pure-Go program for linux/amd64, the same way
// the Makefile builds the real binaries (minus the size of kubeocean).
func staticBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hello\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "kubeocean-test")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// runImage runs the command as `make images` would and returns its stdout.
func runImage(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	var stdout bytes.Buffer
	if err := run(args, func(k string) string { return env[k] }, &stdout); err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return stdout.String()
}

// openArchive unpacks the tarball and opens it with ggcr's OCI layout reader,
// i.e. the way skopeo's oci-archive: transport consumes it.
func openArchive(t *testing.T, archive string) (string, v1.ImageIndex) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI layout: %v", err)
	}
	return dir, idx
}

type tarFile struct {
	typ      byte
	mode     fs.FileMode
	uid, gid int
	mtime    time.Time
	body     []byte
}

func layerFiles(t *testing.T, l v1.Layer) (names []string, files map[string]tarFile) {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	files = map[string]tarFile{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names, files
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		files[hdr.Name] = tarFile{hdr.Typeflag, hdr.FileInfo().Mode(), hdr.Uid, hdr.Gid, hdr.ModTime, body}
	}
}

func singleImage(t *testing.T, idx v1.ImageIndex) (v1.Descriptor, v1.Image) {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex || len(im.Manifests) != 1 {
		t.Fatalf("index.json: media type %q with %d manifests, want OCI index with 1", im.MediaType, len(im.Manifests))
	}
	desc := im.Manifests[0]
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(img); err != nil {
		t.Fatalf("image does not validate (digests, sizes, diff IDs): %v", err)
	}
	return desc, img
}

func TestImageContents(t *testing.T) {
	bin := staticBinary(t)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	caPEM := []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "images", "kubeocean-test.tar")
	stdout := runImage(t, nil, "--binary="+bin, "--tag="+testTag, "--ca-certs="+ca, "--platform=linux/amd64", "--output="+out)
	_, idx := openArchive(t, out)
	desc, img := singleImage(t, idx)

	if !strings.Contains(stdout, desc.Digest.String()) || !strings.Contains(stdout, out) {
		t.Errorf("output %q should name digest %s and path %s", stdout, desc.Digest, out)
	}
	checkDescriptor(t, desc)
	checkManifest(t, img)
	checkConfig(t, img)

	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("got %d layers (err %v), want base + binary", len(layers), err)
	}
	checkBaseLayer(t, layers[0], caPEM)
	checkBinaryLayer(t, layers[1], bin)
}

func checkDescriptor(t *testing.T, desc v1.Descriptor) {
	t.Helper()
	if desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("index entry media type %q", desc.MediaType)
	}
	for _, k := range []string{"org.opencontainers.image.ref.name", "io.containerd.image.name"} {
		if desc.Annotations[k] != testTag {
			t.Errorf("annotation %s = %q, want %q (podman/containerd name the image from it)", k, desc.Annotations[k], testTag)
		}
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != "amd64" {
		t.Errorf("index entry platform %+v", desc.Platform)
	}
	if desc.ArtifactType != "" {
		t.Errorf("index entry has artifactType %q; a plain image should not", desc.ArtifactType)
	}
}

func checkManifest(t *testing.T, img v1.Image) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %q, config %q: want OCI media types", m.MediaType, m.Config.MediaType)
	}
	for i, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer %d media type %q, want %q", i, l.MediaType, types.OCILayer)
		}
	}
}

func checkConfig(t *testing.T, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if len(c.Entrypoint) != 1 || c.Entrypoint[0] != "/kubeocean-test" || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/kubeocean-test] and no cmd", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" || c.WorkingDir != "/" {
		t.Errorf("user %q workdir %q", c.User, c.WorkingDir)
	}
	if len(c.Env) != 1 || !strings.HasPrefix(c.Env[0], "PATH=") {
		t.Errorf("env %q, want PATH only", c.Env)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.title":   "kubeocean-test",
		"org.opencontainers.image.source":  defaultSource,
		"org.opencontainers.image.version": "v1.2.3",
	}
	for k, v := range wantLabels {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if !cf.Created.Equal(time.Unix(0, 0)) || len(cf.History) != 2 {
		t.Errorf("created %v, %d history entries; want epoch 0 and 2", cf.Created, len(cf.History))
	}
}

func checkBaseLayer(t *testing.T, l v1.Layer, caPEM []byte) {
	t.Helper()
	names, files := layerFiles(t, l)
	want := []struct {
		name     string
		mode     fs.FileMode
		uid, gid int
	}{
		{"etc/", fs.ModeDir | 0o755, 0, 0},
		{"etc/group", 0o644, 0, 0},
		{"etc/nsswitch.conf", 0o644, 0, 0},
		{"etc/passwd", 0o644, 0, 0},
		{"etc/ssl/", fs.ModeDir | 0o755, 0, 0},
		{"etc/ssl/certs/", fs.ModeDir | 0o755, 0, 0},
		{"etc/ssl/certs/ca-certificates.crt", 0o644, 0, 0},
		{"home/", fs.ModeDir | 0o755, 0, 0},
		{"home/nonroot/", fs.ModeDir | 0o700, 65532, 65532},
		{"root/", fs.ModeDir | 0o700, 0, 0},
		{"tmp/", fs.ModeDir | fs.ModeSticky | 0o777, 0, 0},
	}
	if len(names) != len(want) {
		t.Fatalf("base layer has %q, want %d entries", names, len(want))
	}
	for i, w := range want {
		f := files[w.name]
		if names[i] != w.name || f.mode != w.mode || f.uid != w.uid || f.gid != w.gid {
			t.Errorf("entry %d: %s %v %d:%d, want %s %v %d:%d", i, names[i], f.mode, f.uid, f.gid, w.name, w.mode, w.uid, w.gid)
		}
		if !f.mtime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s mtime %v, want epoch 0", w.name, f.mtime)
		}
	}
	if !strings.Contains(string(files["etc/passwd"].body), "nonroot:x:65532:65532:") ||
		!strings.Contains(string(files["etc/group"].body), "nonroot:x:65532:") {
		t.Errorf("passwd/group lack nonroot 65532:\n%s%s", files["etc/passwd"].body, files["etc/group"].body)
	}
	if !bytes.Equal(files[caCertsPath].body, caPEM) {
		t.Errorf("CA bundle not copied verbatim")
	}
}

func checkBinaryLayer(t *testing.T, l v1.Layer, bin string) {
	t.Helper()
	names, files := layerFiles(t, l)
	if len(names) != 1 || names[0] != "kubeocean-test" {
		t.Fatalf("binary layer has %q, want only kubeocean-test", names)
	}
	f := files["kubeocean-test"]
	if f.typ != tar.TypeReg || f.mode != 0o755 || f.uid != 0 || f.gid != 0 {
		t.Errorf("binary is type %c mode %v owner %d:%d, want regular 0755 root", f.typ, f.mode, f.uid, f.gid)
	}
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(f.body, want) {
		t.Errorf("binary in image differs from %s (%d vs %d bytes)", bin, len(f.body), len(want))
	}
}

func TestWithoutCACerts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.tar")
	runImage(t, nil, "--binary="+staticBinary(t), "--tag="+testTag, "--output="+out)
	_, idx := openArchive(t, out)
	_, img := singleImage(t, idx)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	names, _ := layerFiles(t, layers[0])
	for _, n := range names {
		if strings.HasPrefix(n, "etc/ssl") {
			t.Errorf("base layer has %s without --ca-certs", n)
		}
	}
}

func TestReproducible(t *testing.T) {
	bin := staticBinary(t)
	dir := t.TempDir()
	build := func(out string, env map[string]string) ([]byte, string) {
		stdout := runImage(t, env, "--binary="+bin, "--tag="+testTag, "--output="+filepath.Join(dir, out))
		b, err := os.ReadFile(filepath.Join(dir, out))
		if err != nil {
			t.Fatal(err)
		}
		return b, strings.Fields(stdout)[1]
	}
	a, digestA := build("a.tar", nil)
	b, digestB := build("b.tar", nil)
	if digestA != digestB || sha256.Sum256(a) != sha256.Sum256(b) {
		t.Errorf("two builds differ: %s vs %s", digestA, digestB)
	}
	_, digestC := build("c.tar", map[string]string{"SOURCE_DATE_EPOCH": "1700000000"})
	if digestC == digestA {
		t.Errorf("SOURCE_DATE_EPOCH did not change the digest")
	}
	_, idx := openArchive(t, filepath.Join(dir, "c.tar"))
	_, img := singleImage(t, idx)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Unix(1700000000, 0); !cf.Created.Equal(want) {
		t.Errorf("created %v, want %v", cf.Created, want)
	}
}
