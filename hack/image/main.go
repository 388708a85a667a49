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

// Command image writes an OCI image archive (an OCI image layout, tarred) for
// one of kubeocean's static binaries without needing Docker or any daemon:
//
//	go run . --image=kubeocean-manager --bin-dir=../../bin/linux_amd64 \
//	  --tag=ghcr.io/kubeocean/kubeocean-manager:v0.1.0 \
//	  --output=../../bin/images/kubeocean-manager.tar --platform=linux/amd64
//
// --image takes what the image holds from the table in images.go, the one
// definition of Kubeocean's images; --binary (and --extra-binary) package
// any static binary instead. --list=images or --list=commands prints the
// table's image names or the ./cmd/ commands they hold, one a line, for the
// Makefile. It is its own module (go.mod here), so go-containerregistry
// stays out of the library's go.mod.
//
// The result loads with `podman load -i` or `skopeo copy oci-archive:...`
// (and containerd's `ctr images import`), and is byte-for-byte reproducible:
// timestamps come from SOURCE_DATE_EPOCH (epoch 0 when unset).
//
// The image mirrors the target of the same name in the repository's
// Dockerfile (distroless static, nonroot): dockerfile_test.go keeps the two
// in step.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// nonrootUser is the uid:gid of distroless's "nonroot" user; the Dockerfiles
// use the same numbers so that a PodSecurity "restricted" namespace (which
// needs runAsNonRoot) accepts either image.
const nonrootUser = "65532:65532"

const defaultSource = "https://github.com/kubeocean/kubeocean"

type options struct {
	binary   string
	name     string
	tag      name.Tag
	output   string
	platform v1.Platform
	source   string
	caCerts  string
	created  time.Time
	// extras are more static binaries, at /usr/local/bin/<base name>:
	// companions that the main binary's Deployments run by name
	// (kubeocean-dns in the syncer's image).
	extras []string
	// list, when set, is printed instead of building an image (--list).
	list []string
}

func main() {
	if err := run(os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string, getenv func(string) string, stdout io.Writer) error {
	opts, err := parseOptions(args, getenv)
	if err != nil {
		return err
	}
	if opts.list != nil {
		for _, l := range opts.list {
			fmt.Fprintln(stdout, l)
		}
		return nil
	}
	res, err := build(opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s\n%s (%d bytes, %d layers, %s)\n",
		opts.tag, res.digest, opts.output, res.size, res.layers, platformString(opts.platform))
	return nil
}

func parseOptions(args []string, getenv func(string) string) (*options, error) {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	image := fs.String("image", "", "one of Kubeocean's images (images.go): packages <bin-dir>/<image> and its companions")
	binDir := fs.String("bin-dir", "", "with --image: the directory the static Linux binaries were built into")
	list := fs.String("list", "", `"images" or "commands": print the images.go table's image names or the ./cmd/ commands they hold, and exit`)
	binary := fs.String("binary", "", "static Linux binary to package (--binary or --image is required)")
	imgName := fs.String("name", "", "file name of the binary in the image, /<name> (default: base name of --binary)")
	tag := fs.String("tag", "", "full image reference, registry/repository:tag (required)")
	output := fs.String("output", "", "path of the OCI archive to write (default: bin/images/<name>.tar)")
	platform := fs.String("platform", "linux/amd64", "os/arch[/variant] the binary was built for")
	source := fs.String("source", defaultSource, "org.opencontainers.image.source label")
	var extras []string
	fs.Func("extra-binary", "another static Linux binary to place at /usr/local/bin/<base name> (repeatable)", func(v string) error {
		extras = append(extras, v)
		return nil
	})
	caCerts := fs.String("ca-certs", "", "PEM bundle to install as /etc/ssl/certs/ca-certificates.crt (default: none)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *list != "" {
		return listOptions(*list)
	}
	opts := &options{binary: *binary, name: *imgName, output: *output, source: *source, caCerts: *caCerts, extras: extras}
	if err := opts.fromImage(*image, *binDir); err != nil {
		return nil, err
	}
	if opts.binary == "" || *tag == "" {
		return nil, errors.New("--binary or --image, and --tag are required")
	}
	if opts.name == "" {
		opts.name = filepath.Base(opts.binary)
	}
	if err := checkName(opts.name); err != nil {
		return nil, err
	}
	if opts.output == "" {
		opts.output = filepath.Join("bin", "images", opts.name+".tar")
	}
	var err error
	// Strict: the archive's annotations are what `podman load` names the
	// image after, so a defaulted docker.io/library/...:latest would surprise.
	if opts.tag, err = name.NewTag(*tag, name.StrictValidation); err != nil {
		return nil, fmt.Errorf("--tag: %w", err)
	}
	if opts.platform, err = parsePlatform(*platform); err != nil {
		return nil, err
	}
	if opts.created, err = sourceDateEpoch(getenv("SOURCE_DATE_EPOCH")); err != nil {
		return nil, err
	}
	return opts, nil
}

func listOptions(what string) (*options, error) {
	switch what {
	case "images":
		return &options{list: imageNames()}, nil
	case "commands":
		return &options{list: commands()}, nil
	}
	return nil, fmt.Errorf("--list %q: want images or commands", what)
}

// fromImage fills in the binaries, and the name, of the image named on the
// command line; --image stands for --binary, --name and --extra-binary.
func (o *options) fromImage(image, binDir string) error {
	if image == "" {
		if binDir != "" {
			return errors.New("--bin-dir needs --image")
		}
		return nil
	}
	if o.binary != "" || o.name != "" || len(o.extras) > 0 || binDir == "" {
		return errors.New("--image takes --bin-dir, and no --binary, --name or --extra-binary")
	}
	spec, err := lookupImage(image)
	if err != nil {
		return err
	}
	spec.fromBinDir(o, binDir)
	return nil
}

func checkName(n string) error {
	if n == "" || n == "." || n == ".." || strings.ContainsAny(n, `/\:`) {
		return fmt.Errorf("--name %q must be a plain file name", n)
	}
	return nil
}

func parsePlatform(s string) (v1.Platform, error) {
	p, err := v1.ParsePlatform(s)
	if err != nil {
		return v1.Platform{}, fmt.Errorf("--platform: %w", err)
	}
	if p.OS != "linux" || p.Architecture == "" || p.OSVersion != "" {
		return v1.Platform{}, fmt.Errorf("--platform %q: want linux/<arch>[/<variant>]", s)
	}
	return *p, nil
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// sourceDateEpoch follows https://reproducible-builds.org/specs/source-date-epoch/
// so release tooling can stamp a meaningful date while local builds stay
// reproducible with the Unix epoch.
func sourceDateEpoch(v string) (time.Time, error) {
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	if err != nil || secs < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a non-negative integer", v)
	}
	return time.Unix(secs, 0).UTC(), nil
}
