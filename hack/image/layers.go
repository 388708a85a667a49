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
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// fileEntry is one file or directory in a layer. Owner and mode are spelled
// out rather than taken from the host so the layer does not depend on who
// built it or their umask.
type fileEntry struct {
	path     string // relative to /, directories end in "/"
	mode     int64  // permission bits, plus 01000 for sticky
	uid, gid int
	body     []byte // nil for directories
}

// Same accounts as distroless's static image, so the Dockerfile-built and the
// Go-built images resolve uid 65532 to the same name and home.
const (
	passwdFile = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	groupFile = "root:x:0:\n" +
		"nonroot:x:65532:\n"
	// Without this file Go's resolver and glibc-compatible tools may ask DNS
	// before /etc/hosts, which breaks Kubernetes hostAliases.
	nsswitchFile = "hosts: files dns\n"
)

const caCertsPath = "etc/ssl/certs/ca-certificates.crt"

// baseEntries lists the base layer, parents before children. caBundle may be
// nil, in which case TLS clients can only trust CAs they are handed (e.g. a
// kubeconfig's certificate-authority-data), as with a scratch image.
func baseEntries(caBundle []byte) []fileEntry {
	e := []fileEntry{
		{path: "etc/", mode: 0o755},
		{path: "etc/group", mode: 0o644, body: []byte(groupFile)},
		{path: "etc/nsswitch.conf", mode: 0o644, body: []byte(nsswitchFile)},
		{path: "etc/passwd", mode: 0o644, body: []byte(passwdFile)},
	}
	if caBundle != nil {
		e = append(e,
			fileEntry{path: "etc/ssl/", mode: 0o755},
			fileEntry{path: "etc/ssl/certs/", mode: 0o755},
			fileEntry{path: caCertsPath, mode: 0o644, body: caBundle},
		)
	}
	return append(e,
		fileEntry{path: "home/", mode: 0o755},
		fileEntry{path: "home/nonroot/", mode: 0o700, uid: 65532, gid: 65532},
		fileEntry{path: "root/", mode: 0o700},
		fileEntry{path: "tmp/", mode: 0o1777},
	)
}

// writeTar writes entries with a fixed mtime so that identical inputs give
// identical bytes, hence identical layer digests.
func writeTar(w io.Writer, entries []fileEntry, mtime time.Time) error {
	tw := tar.NewWriter(w)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:    e.path,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
		}
		if e.body == nil {
			hdr.Typeflag = tar.TypeDir
		} else {
			hdr.Typeflag = tar.TypeReg
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("tar header %s: %w", e.path, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return fmt.Errorf("tar body %s: %w", e.path, err)
		}
	}
	return tw.Close()
}

// newLayer gzips entries into an OCI layer. The whole tar is kept in memory:
// our largest input is one ~60 MB binary, and it lets ggcr re-read the layer
// (digest, diff ID, blob write) without temp files.
func newLayer(entries []fileEntry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, entries, mtime); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(
		func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(raw)), nil },
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.BestCompression),
		tarball.WithCompressedCaching,
	)
}

func readCABundle(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--ca-certs: %w", err)
	}
	if !bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("--ca-certs: %s holds no PEM certificate", path)
	}
	return b, nil
}
