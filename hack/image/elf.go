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
	"errors"
	"fmt"
	"io"
	"io/fs"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

type elfTarget struct {
	machine elf.Machine
	class   elf.Class
	order   binary.ByteOrder
}

// elfTargets maps GOARCH to what its ELF header must say. Byte order is part
// of it because ppc64 and ppc64le share EM_PPC64.
var elfTargets = map[string]elfTarget{
	"amd64":   {elf.EM_X86_64, elf.ELFCLASS64, binary.LittleEndian},
	"arm64":   {elf.EM_AARCH64, elf.ELFCLASS64, binary.LittleEndian},
	"arm":     {elf.EM_ARM, elf.ELFCLASS32, binary.LittleEndian},
	"386":     {elf.EM_386, elf.ELFCLASS32, binary.LittleEndian},
	"ppc64le": {elf.EM_PPC64, elf.ELFCLASS64, binary.LittleEndian},
	"s390x":   {elf.EM_S390, elf.ELFCLASS64, binary.BigEndian},
	"riscv64": {elf.EM_RISCV, elf.ELFCLASS64, binary.LittleEndian},
	"loong64": {elf.EM_LOONGARCH, elf.ELFCLASS64, binary.LittleEndian},
}

// checkStaticELF refuses anything but a statically linked executable for p.
// The image has no libc and no dynamic loader, so a CGO or PIE build would
// only fail at container start ("no such file or directory"); catching it
// here turns that into a build error.
func checkStaticELF(path string, p v1.Platform) error {
	want, ok := elfTargets[p.Architecture]
	if !ok {
		return fmt.Errorf("unsupported architecture %q", p.Architecture)
	}
	f, err := elf.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, err)
	}
	defer func() { _ = f.Close() }()

	if f.Machine != want.machine || f.Class != want.class || f.ByteOrder != want.order {
		return fmt.Errorf("%s is built for %s (%s, %s), not %s: set GOARCH",
			path, f.Machine, f.Class, f.ByteOrder, p.Architecture)
	}
	for _, prog := range f.Progs {
		switch prog.Type {
		case elf.PT_INTERP:
			return fmt.Errorf("%s is dynamically linked (interpreter %s): build with CGO_ENABLED=0", path, interpreter(prog))
		case elf.PT_DYNAMIC:
			return fmt.Errorf("%s has a dynamic segment: build with CGO_ENABLED=0", path)
		}
	}
	if f.Section(".dynamic") != nil || f.Section(".interp") != nil {
		return fmt.Errorf("%s has dynamic-linking sections: build with CGO_ENABLED=0", path)
	}
	if f.Type != elf.ET_EXEC {
		return fmt.Errorf("%s is %s, not a static executable (ET_EXEC): build with CGO_ENABLED=0 and without -buildmode=pie", path, f.Type)
	}
	return nil
}

func interpreter(prog *elf.Prog) string {
	b, err := io.ReadAll(io.LimitReader(prog.Open(), 4096))
	if err != nil {
		return "unreadable"
	}
	return string(bytes.TrimRight(b, "\x00"))
}
