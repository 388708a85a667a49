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
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// craftELF writes a minimal x86-64 ELF header with the given type and
// program headers, so the refusal paths are tested without a C toolchain.
func craftELF(t *testing.T, typ elf.Type, progs ...elf.ProgType) string {
	t.Helper()
	var buf bytes.Buffer
	interp := []byte("/lib64/ld-linux-x86-64.so.2\x00")
	dataOff := uint64(64 + 56*len(progs))
	hdr := elf.Header64{
		Type: uint16(typ), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: uint16(len(progs)), Shentsize: 64,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	must(t, binary.Write(&buf, binary.LittleEndian, hdr))
	for _, p := range progs {
		must(t, binary.Write(&buf, binary.LittleEndian, elf.Prog64{
			Type: uint32(p), Off: dataOff, Filesz: uint64(len(interp)), Memsz: uint64(len(interp)), Flags: uint32(elf.PF_R),
		}))
	}
	buf.Write(interp)
	path := filepath.Join(t.TempDir(), "crafted")
	must(t, os.WriteFile(path, buf.Bytes(), 0o755))
	return path
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRefusesNonStaticBinaries(t *testing.T) {
	text := filepath.Join(t.TempDir(), "script")
	must(t, os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755))
	amd64 := staticBinary(t)
	cases := map[string]struct {
		path, platform, want string
	}{
		"not ELF":        {text, "linux/amd64", "not an ELF"},
		"interpreter":    {craftELF(t, elf.ET_EXEC, elf.PT_LOAD, elf.PT_INTERP), "linux/amd64", "ld-linux-x86-64.so.2"},
		"dynamic":        {craftELF(t, elf.ET_EXEC, elf.PT_LOAD, elf.PT_DYNAMIC), "linux/amd64", "dynamic segment"},
		"PIE":            {craftELF(t, elf.ET_DYN, elf.PT_LOAD), "linux/amd64", "not a static executable"},
		"wrong arch":     {amd64, "linux/arm64", "not arm64"},
		"unknown arch":   {amd64, "linux/mips", "unsupported architecture"},
		"missing binary": {filepath.Join(t.TempDir(), "nope"), "linux/amd64", "no such file"},
	}
	// The host's own ls is a real glibc-linked executable when there is one.
	if ls, err := exec.LookPath("ls"); err == nil {
		if f, err := elf.Open(ls); err == nil && f.Machine == elf.EM_X86_64 {
			cases["host ls"] = struct{ path, platform, want string }{ls, "linux/amd64", "CGO_ENABLED=0"}
		}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.tar")
			err := run([]string{"--binary=" + c.path, "--name=x", "--tag=" + testTag, "--platform=" + c.platform, "--output=" + out},
				func(string) string { return "" }, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
			if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
				t.Errorf("refused build left %s behind", out)
			}
		})
	}
}

func TestParseOptionsErrors(t *testing.T) {
	cases := map[string]struct {
		args []string
		env  string
		want string
	}{
		"no tag":          {[]string{"--binary=b"}, "", "required"},
		"defaulted tag":   {[]string{"--binary=b", "--tag=kubeocean-manager"}, "", "--tag"},
		"windows":         {[]string{"--binary=b", "--tag=" + testTag, "--platform=windows/amd64"}, "", "want linux"},
		"name with slash": {[]string{"--binary=b", "--tag=" + testTag, "--name=a/b"}, "", "plain file name"},
		"bad epoch":       {[]string{"--binary=b", "--tag=" + testTag}, "yesterday", "SOURCE_DATE_EPOCH"},
		"unknown image":   {[]string{"--image=kubeocean-cli", "--bin-dir=d", "--tag=" + testTag}, "", "want one of"},
		"image, binary":   {[]string{"--image=kubeocean-syncer", "--bin-dir=d", "--binary=b", "--tag=" + testTag}, "", "no --binary"},
		"image, no dir":   {[]string{"--image=kubeocean-syncer", "--tag=" + testTag}, "", "takes --bin-dir"},
		"dir, no image":   {[]string{"--bin-dir=d", "--binary=b", "--tag=" + testTag}, "", "needs --image"},
		"bad list":        {[]string{"--list=tags"}, "", "want images or commands"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parseOptions(c.args, func(string) string { return c.env })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}
